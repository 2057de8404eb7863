import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { OID, verifyCms } from './cms.js';
import type { LongTermData } from './long-term.js';

/** What the long-term part of a PAdES signature holds: its document time-stamps' times, and why not, if not. */
export interface LongTermCheck {
  /** The genTime of each document time-stamp that holds, oldest first. */
  archiveTimes: string[];
  /** The /DSS carries revocation data (OCSP responses or CRLs), each signed by a trust anchor. */
  validationData: boolean;
  problems: string[];
}

/**
 * Checks the document time-stamps (ETSI.RFC3161) and the /DSS validation data
 * that revisions after a seal added: each time-stamp token verifies, its
 * authority chains to a trust anchor at the token's time, and its imprint is
 * the SHA-256 of exactly the bytes its /ByteRange names (which begin the file
 * and include the seal); each OCSP response and CRL is signed by a trust
 * anchor. Never throws on hostile input.
 */
export async function checkLongTerm(
  pdf: Buffer,
  data: LongTermData,
  sealEnd: number,
  anchors: readonly pkijs.Certificate[],
): Promise<LongTermCheck> {
  const problems: string[] = [];
  const archiveTimes: string[] = [];
  for (const [i, ts] of data.documentTimestamps.entries()) {
    const label = `document time-stamp ${i + 1}`;
    const [a, b, c, d] = ts.byteRange;
    if (a !== 0 || b <= sealEnd || c <= b || c + d > pdf.length || pdf[b] !== 0x3c || pdf[c - 1] !== 0x3e) {
      problems.push(`${label}: its /ByteRange [${a} ${b} ${c} ${d}] does not frame its /Contents after the seal`);
      continue;
    }
    let token: pkijs.SignedData;
    let info: pkijs.TSTInfo;
    try {
      const asn = asn1js.fromBER(ts.token);
      if (asn.offset === -1) throw new Error(asn.result.error);
      const contentInfo = new pkijs.ContentInfo({ schema: asn.result });
      token = new pkijs.SignedData({ schema: contentInfo.content });
      const eContent = token.encapContentInfo.eContent;
      if (token.encapContentInfo.eContentType !== OID.tstInfo || !eContent) throw new Error('its content is not a TSTInfo');
      info = pkijs.TSTInfo.fromBER(eContent.getValue());
    } catch (err) {
      problems.push(`${label} is not a readable RFC 3161 token: ${(err as Error).message}`);
      continue;
    }
    // pkijs checks a token's imprint against the stamped bytes themselves, so they are joined once.
    const stamped = Buffer.concat([pdf.subarray(0, b), pdf.subarray(c, c + d)]);
    const digest = createHash('sha256').update(stamped).digest();
    const imprint = info.messageImprint;
    if (imprint.hashAlgorithm.algorithmId !== OID.sha256 || !Buffer.from(imprint.hashedMessage.valueBlock.valueHexView).equals(digest)) {
      problems.push(`${label} is for other bytes than the ones its /ByteRange names`);
      continue;
    }
    const verified = await verifyCms(token, stamped, anchors, info.genTime);
    if (!verified.signatureValid) problems.push(`${label} does not verify: ${verified.message}`);
    else if (verified.trusted === false) problems.push(`${label}: its authority does not chain to a trust anchor: ${verified.message}`);
    else archiveTimes.push(info.genTime.toISOString());
  }
  let validationData = false;
  for (const der of data.dss.ocsps) {
    const trusted = await ocspSigned(der, anchors);
    if (!trusted) problems.push('an OCSP response in the /DSS is not signed by a trust anchor');
    validationData ||= trusted;
  }
  for (const der of data.dss.crls) {
    const trusted = await crlSigned(der, anchors);
    if (!trusted) problems.push('a CRL in the /DSS is not signed by a trust anchor');
    validationData ||= trusted;
  }
  return { archiveTimes, validationData, problems };
}

async function ocspSigned(der: Buffer, anchors: readonly pkijs.Certificate[]): Promise<boolean> {
  try {
    const response = pkijs.OCSPResponse.fromBER(der);
    if (!response.responseBytes) return false;
    const basic = pkijs.BasicOCSPResponse.fromBER(response.responseBytes.response.valueBlock.valueHexView);
    // Signed by the CA itself (responder by name, the CA's key): any anchor whose key verifies it.
    for (const anchor of anchors) {
      if (await basic.verify({ trustedCerts: [anchor] }).catch(() => false)) return true;
    }
    return false;
  } catch {
    return false;
  }
}

async function crlSigned(der: Buffer, anchors: readonly pkijs.Certificate[]): Promise<boolean> {
  try {
    const crl = pkijs.CertificateRevocationList.fromBER(der);
    for (const anchor of anchors) {
      if (await crl.verify({ issuerCertificate: anchor }).catch(() => false)) return true;
    }
    return false;
  } catch {
    return false;
  }
}
