import { createHash } from 'node:crypto';
import * as pkijs from 'pkijs';
import { readSignedData } from './cms-read.js';
import { chainExpiry, OID, outsideValidity, verifyCms } from './cms.js';
import type { LongTermData } from './long-term.js';
import type { PdfBytes } from './pdf-bytes.js';
import { summarize, type CertificateSummary } from './pki.js';
import type { TrustPolicy } from './trust.js';

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
  pdf: PdfBytes,
  data: LongTermData,
  sealEnd: number,
  trust: TrustPolicy,
  at: Date,
): Promise<LongTermCheck> {
  const anchors = trust.timestamping;
  const problems: string[] = [];
  const archiveTimes: string[] = [];
  let newest: LongTermCheck['newest'] = null;
  // Each token read once, first: a token is judged at the time its successor claims (its genTime) to vouch for it.
  const read = data.documentTimestamps.map((ts) => readToken(ts.token));
  const claimed = read.map((r) => (typeof r === 'string' ? null : r.info.genTime));
  for (const [i, ts] of data.documentTimestamps.entries()) {
    const label = `document time-stamp ${i + 1}`;
    const [a, b, c, d] = ts.byteRange;
    const byteAt = (i: number) => pdf.slice(i, i + 1)?.[0];
    if (a !== 0 || b <= sealEnd || c <= b || c + d > pdf.length || byteAt(b) !== 0x3c || byteAt(c - 1) !== 0x3e) {
      problems.push(`${label}: its /ByteRange [${a} ${b} ${c} ${d}] does not frame its /Contents after the seal`);
      continue;
    }
    const parsed = read[i]!;
    if (typeof parsed === 'string') {
      problems.push(`${label} is not a readable RFC 3161 token: ${parsed}`);
      continue;
    }
    const { token, info } = parsed;
    // The stamped bytes are never joined: their digest comes from the pass that read the file (or views of it).
    const stamped = pdf.span(b, c, d);
    let digest: Buffer;
    try {
      digest = stamped('SHA-256');
    } catch (err) {
      problems.push(`${label} cannot be checked: ${(err as Error).message}`);
      continue;
    }
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
    const token = readSignedData(der);
    const eContent = token.encapContentInfo.eContent;
    if (token.encapContentInfo.eContentType !== OID.tstInfo || !eContent) throw new Error('its content is not a TSTInfo');
    return { token, info: pkijs.TSTInfo.fromBER(eContent.getValue()) };
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * OCSP responses and CRLs an anchor was found to sign, by the SHA-256 of their DER and of that anchor (its signed
 * part as read and its DER), with the span of time the verdict may be reused in. Safe: the verdict depends on
 * those exact bytes and that anchor alone, except that pkijs validates an OCSP responder's chain at the wall clock
 * (`new Date()`, not the time of checking): an OCSP verdict is reused only while every certificate the response
 * carries and the anchor are within their dates, when that date check passes whatever the time (the chain it
 * builds, from those certificates, does not depend on the time). A CRL's check looks at no date. Only verdicts that
 * held are kept (a failure may be an error of the moment, and is checked again); bounded, the oldest out first.
 */
const SIGNED = new Map<string, { from: number; until: number }>();
const SIGNED_MAX = 1_000;
const ANCHOR_ID = new WeakMap<pkijs.Certificate, string>();

/** The key of a verdict by `anchor`; undefined (nothing remembered) for an anchor that cannot be encoded. */
function signedKey(kind: 'ocsp' | 'crl', digest: string, anchor: pkijs.Certificate): string | undefined {
  let id = ANCHOR_ID.get(anchor);
  if (!id) {
    try {
      if (!anchor.tbsView.byteLength) return undefined;
      id = createHash('sha256')
        .update(anchor.tbsView)
        .update(Buffer.from(anchor.toSchema().toBER(false)))
        .digest('hex');
    } catch {
      return undefined;
    }
    ANCHOR_ID.set(anchor, id);
  }
  return `${kind}:${digest}:${id}`;
}

function signedBefore(kind: 'ocsp' | 'crl', digest: string, anchors: readonly pkijs.Certificate[]): boolean {
  const now = Date.now();
  return anchors.some((anchor) => {
    const key = signedKey(kind, digest, anchor);
    const known = key === undefined ? undefined : SIGNED.get(key);
    return known !== undefined && known.from <= now && now <= known.until;
  });
}

function rememberSigned(key: string | undefined, certs: readonly pkijs.Certificate[]): void {
  if (key === undefined) return;
  const from = Math.max(-Infinity, ...certs.map((c) => c.notBefore.value.getTime()));
  const until = Math.min(Infinity, ...certs.map((c) => c.notAfter.value.getTime()));
  SIGNED.set(key, { from, until });
  if (SIGNED.size > SIGNED_MAX) SIGNED.delete(SIGNED.keys().next().value!);
}

async function ocspSigned(der: Buffer, anchors: readonly pkijs.Certificate[]): Promise<boolean> {
  try {
    const digest = createHash('sha256').update(der).digest('hex');
    if (signedBefore('ocsp', digest, anchors)) return true;
    const response = pkijs.OCSPResponse.fromBER(der);
    if (!response.responseBytes) return false;
    // asn1js already parsed the BasicOCSPResponse inside the OCTET STRING when it is exactly its content, as
    // parsing those bytes again would: that tree is used, else the bytes are parsed as before.
    const octets = response.responseBytes.response;
    const inner = octets.idBlock.isConstructed ? undefined : octets.valueBlock.value;
    const basic =
      inner?.length === 1
        ? new pkijs.BasicOCSPResponse({ schema: inner[0] })
        : pkijs.BasicOCSPResponse.fromBER(octets.valueBlock.valueHexView);
    // Signed by the CA itself (responder by name, the CA's key): any anchor whose key verifies it.
    for (const anchor of anchors) {
      if (await basic.verify({ trustedCerts: [anchor] }).catch(() => false)) {
        rememberSigned(signedKey('ocsp', digest, anchor), [...(basic.certs ?? []), anchor]);
        return true;
      }
    }
    return false;
  } catch {
    return false;
  }
}

async function crlSigned(der: Buffer, anchors: readonly pkijs.Certificate[]): Promise<boolean> {
  try {
    const digest = createHash('sha256').update(der).digest('hex');
    if (signedBefore('crl', digest, anchors)) return true;
    const crl = pkijs.CertificateRevocationList.fromBER(der);
    for (const anchor of anchors) {
      if (await crl.verify({ issuerCertificate: anchor }).catch(() => false)) {
        rememberSigned(signedKey('crl', digest, anchor), []);
        return true;
      }
    }
    return false;
  } catch {
    return false;
  }
}
