import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { chainExpiry, OID, outsideValidity, verifyCms } from './cms.js';
import type { LongTermData } from './long-term.js';
import { summarize, type CertificateSummary } from './pki.js';

/** What the long-term part of a PAdES signature holds: its document time-stamps' times, and why not, if not. */
export interface LongTermCheck {
  /** The genTime of each document time-stamp that holds, oldest first. */
  archiveTimes: string[];
  /**
   * The newest document time-stamp that holds: its authority, and until when that authority's certificate and
   * the anchor it chains to are valid. After that nothing vouches for the evidence unless a newer time-stamp
   * was added (the upkeep's renewal, docs/evidence.md).
   */
  newest: { time: string; authority: CertificateSummary; expiresAt: string } | null;
  /** The /DSS carries revocation data (OCSP responses or CRLs), each signed by a trust anchor. */
  validationData: boolean;
  problems: string[];
}

/**
 * Checks the document time-stamps (ETSI.RFC3161) and the /DSS validation data
 * that revisions after a seal added: each time-stamp token verifies, its
 * imprint is the SHA-256 of exactly the bytes its /ByteRange names (which
 * begin the file and include the seal), and its authority chains to a trust
 * anchor at the time the next time-stamp proves it existed, or, for the
 * newest, at `at`, the time of checking (EN 319 102-1's archival validation:
 * a time-stamp whose certificate expired with no newer one over it proves
 * nothing). Each OCSP response and CRL is signed by a trust anchor. Never
 * throws on hostile input.
 */
export async function checkLongTerm(
  pdf: Buffer,
  data: LongTermData,
  sealEnd: number,
  anchors: readonly pkijs.Certificate[],
  at: Date,
): Promise<LongTermCheck> {
  const problems: string[] = [];
  const archiveTimes: string[] = [];
  let newest: LongTermCheck['newest'] = null;
  // Each token read once, first: a token is judged at the time its successor claims (its genTime) to vouch for it.
  const read = data.documentTimestamps.map((ts) => readToken(ts.token));
  const claimed = read.map((r) => (typeof r === 'string' ? null : r.info.genTime));
  for (const [i, ts] of data.documentTimestamps.entries()) {
    const label = `document time-stamp ${i + 1}`;
    const [a, b, c, d] = ts.byteRange;
    if (a !== 0 || b <= sealEnd || c <= b || c + d > pdf.length || pdf[b] !== 0x3c || pdf[c - 1] !== 0x3e) {
      problems.push(`${label}: its /ByteRange [${a} ${b} ${c} ${d}] does not frame its /Contents after the seal`);
      continue;
    }
    const parsed = read[i]!;
    if (typeof parsed === 'string') {
      problems.push(`${label} is not a readable RFC 3161 token: ${parsed}`);
      continue;
    }
    const { token, info } = parsed;
    // pkijs checks a token's imprint against the stamped bytes themselves, so they are joined once.
    const stamped = Buffer.concat([pdf.subarray(0, b), pdf.subarray(c, c + d)]);
    const digest = createHash('sha256').update(stamped).digest();
    const imprint = info.messageImprint;
    if (imprint.hashAlgorithm.algorithmId !== OID.sha256 || !Buffer.from(imprint.hashedMessage.valueBlock.valueHexView).equals(digest)) {
      problems.push(`${label} is for other bytes than the ones its /ByteRange names`);
      continue;
    }
    const later = claimed.slice(i + 1).find((t): t is Date => t !== null);
    const judgedAt = later ?? at;
    if (info.genTime.getTime() > judgedAt.getTime() + 60_000) {
      problems.push(`${label} claims ${info.genTime.toISOString()}, after ${later ? 'the time-stamp over it' : 'the time of checking'}`);
      continue;
    }
    const verified = await verifyCms(token, stamped, anchors, judgedAt);
    if (!verified.signatureValid) problems.push(`${label} does not verify: ${verified.message}`);
    else if (verified.trusted === false) {
      const when = later ? `when the next time-stamp was made (${later.toISOString()})` : `at ${at.toISOString()}`;
      problems.push(`${label}: its authority does not chain to a trust anchor ${when}: ${verified.message}`);
    } else if (verified.signer && outsideValidity(verified.signer, anchors, judgedAt)) {
      const when = later ? 'when the next time-stamp was made' : 'at the time of checking, and no newer time-stamp covers it';
      problems.push(`${label} no longer vouches ${when}: ${outsideValidity(verified.signer, anchors, judgedAt)}`);
    } else {
      archiveTimes.push(info.genTime.toISOString());
      if (!later && verified.signer) {
        newest = {
          time: info.genTime.toISOString(),
          authority: summarize(verified.signer),
          expiresAt: chainExpiry(verified.signer, anchors).toISOString(),
        };
      }
    }
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
  return { archiveTimes, newest, validationData, problems };
}

/** The genTime a time-stamp token claims, unverified (null when unreadable): only to order the checks. */
/** An RFC 3161 token and its TSTInfo, or why it cannot be read. */
function readToken(der: Buffer): { token: pkijs.SignedData; info: pkijs.TSTInfo } | string {
  try {
    const asn = asn1js.fromBER(der);
    if (asn.offset === -1) throw new Error(asn.result.error);
    const contentInfo = new pkijs.ContentInfo({ schema: asn.result });
    const token = new pkijs.SignedData({ schema: contentInfo.content });
    const eContent = token.encapContentInfo.eContent;
    if (token.encapContentInfo.eContentType !== OID.tstInfo || !eContent) throw new Error('its content is not a TSTInfo');
    return { token, info: pkijs.TSTInfo.fromBER(eContent.getValue()) };
  } catch (err) {
    return (err as Error).message;
  }
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
