import * as pkijs from 'pkijs';
import { readSignedData } from './cms-read.js';
import { readCertificates } from './der-memo.js';
import { chainExpiry, outsideValidity, verifyCms } from './cms.js';
import { tokenProblems } from './timestamp.js';
import type { LongTermData } from './long-term.js';
import type { PdfBytes } from './pdf-bytes.js';
import { type CertificateSummary, OID, summarize } from './pki.js';
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
  /** The document time-stamps that hold, oldest first, with their authorities' paths (whose revocation the caller checks). */
  held: { label: string; genTime: Date; chain: pkijs.Certificate[] }[];
  problems: string[];
}

/**
 * Checks the document time-stamps (ETSI.RFC3161) that revisions after a seal
 * added: each time-stamp token verifies, its
 * imprint is the SHA-256 of exactly the bytes its /ByteRange names (which
 * begin the file and include the seal), and its authority chains to a trust
 * anchor at the time the next time-stamp proves it existed, or, for the
 * newest, at `at`, the time of checking (EN 319 102-1's archival validation:
 * a time-stamp whose certificate expired with no newer one over it proves
 * nothing), with the profile a token needs (`tokenProblems`). Whether their
 * authorities were revoked is the caller's to check, with the seal's (the
 * /DSS feeds both). Never throws on hostile input.
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
  const held: LongTermCheck['held'] = [];
  // Certificates the /DSS carries: a token that leaves out an intermediate may find it there.
  const pool = readCertificates(data.dss.certs);
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
    const verified = await verifyCms(token, stamped, anchors, judgedAt, pool);
    const profile =
      verified.signer && verified.signatureValid ? tokenProblems(label, token, verified.signer, verified.chain, info.genTime) : [];
    if (!verified.signatureValid) problems.push(`${label} does not verify: ${verified.message}`);
    else if (verified.trusted === false || !verified.chain) {
      const when = later ? `when the next time-stamp was made (${later.toISOString()})` : `at ${at.toISOString()}`;
      problems.push(`${label}: its authority does not chain to a trust anchor ${when}: ${verified.message}`);
    } else if (profile.length > 0) problems.push(...profile);
    else if (outsideValidity(verified.chain, judgedAt)) {
      const when = later ? 'when the next time-stamp was made' : 'at the time of checking, and no newer time-stamp covers it';
      problems.push(`${label} no longer vouches ${when}: ${outsideValidity(verified.chain, judgedAt)}`);
    } else {
      archiveTimes.push(info.genTime.toISOString());
      held.push({ label, genTime: info.genTime, chain: verified.chain });
      if (!later && verified.signer) {
        newest = {
          time: info.genTime.toISOString(),
          authority: summarize(verified.signer),
          expiresAt: chainExpiry(verified.chain).toISOString(),
        };
      }
    }
  }
  return { archiveTimes, newest, held, problems };
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
