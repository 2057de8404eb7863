import type * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { readSignedData } from './cms-read.js';
import { verifyCms } from './cms.js';
import { wholePdf, type PdfBytes } from './pdf-bytes.js';
import type { Indication, SubIndication } from './report.js';
import { type CertificateSummary, OID, summarize } from './pki.js';
import { checkLongTerm } from './archive-timestamps.js';
import { findSeal, readLongTermData, SealedRevisionError, type LongTermData } from './long-term.js';
import { checkSignatureTimestamp, type TimestampSummary } from './timestamp.js';
import { chainAlgorithmProblems, essProblem, sealCertificateProblems, signerInfoAlgorithmProblems } from './certificate-policy.js';
import { revocationStatus, type RevocationSources } from './revocation-check.js';
import { readCertificates } from './der-memo.js';
import { formatPin, spkiSha256, type TrustPolicy } from './trust.js';

/** What checking one PDF's signature found; `problems` is empty exactly when the signature is valid, whole and trusted. */
export interface PdfSignatureCheck {
  /** The PDF carries at least one signature dictionary. */
  signed: boolean;
  /** The CMS signature verifies over the bytes its /ByteRange names. */
  signatureValid: boolean;
  /** The last signature covers every byte of the file but its own value: nothing was appended after signing. */
  coversWholeFile: boolean;
  /** The signer's certificate chains to a trust anchor; null when no anchor was given. */
  trusted: boolean | null;
  subFilter: string | null;
  /** The claimed signing time (the signature dictionary's /M), ISO 8601. */
  signingTime: string | null;
  /** The signature's time-stamp (PAdES B-T), valid unless `problems` say otherwise; null for a B-B signature or an unreadable token. */
  timestamp: TimestampSummary | null;
  signer: CertificateSummary | null;
  /** The time the signer's chain was judged at: the time-stamp's when it holds, else the time of checking. */
  validatedAt: string | null;
  /** The PAdES baseline level its parts that hold reach (EN 319 142-1); null when it is not signed. */
  level: 'B-B' | 'B-T' | 'B-LT' | 'B-LTA' | null;
  /** The times of the document time-stamps (B-LTA) that hold, oldest first. */
  archiveTimestamps: string[];
  /**
   * Until when the newest time-stamp that holds (a document time-stamp, else the signature's) can be validated:
   * the end of its authority's certificate or of the anchor above it. The evidence must be renewed before then.
   */
  evidenceExpiresAt: string | null;
  problems: string[];
  /** The verdict in ETSI EN 319 102-1's terms (clause 5.1.3): TOTAL_PASSED when `problems` is empty and the chain reached a trust anchor. */
  indication: Indication;
  /** Why it is not TOTAL_PASSED, as the standard's sub-indications name it. */
  subIndication: SubIndication | null;
}

/** Records a problem and, for the first one (or the first total failure), the verdict it gives. */
function fail(result: PdfSignatureCheck, problem: string, indication: Exclude<Indication, 'TOTAL_PASSED'>, sub: SubIndication): void {
  result.problems.push(problem);
  if (result.indication === 'TOTAL_PASSED' || (indication === 'TOTAL_FAILED' && result.indication !== 'TOTAL_FAILED')) {
    result.indication = indication;
    result.subIndication = sub;
  }
}

/**
 * Checks a PDF's last signature as a PAdES validator does: the CMS signature
 * verifies over the signed byte ranges (message digest and signer's key),
 * the ranges cover the whole file, and the signer's certificate chains to
 * one of the seal's anchors, with a pinned key (`trust`), at the time its time-stamp vouches for (at `at`, the
 * time of checking, when it has none that holds). Never throws on a hostile file: every
 * failure is a problem in the result. `input` is the file, or what one pass over a large file kept
 * (src/evidence/pdf-stream.ts): a part it needs and that pass did not keep is a problem, never skipped.
 */
export async function checkPdfSignature(input: Buffer | PdfBytes, trust: TrustPolicy, at: Date): Promise<PdfSignatureCheck> {
  const trustAnchors = trust.seal.anchors;
  const pdf = Buffer.isBuffer(input) ? wholePdf(input) : input;
  const result: PdfSignatureCheck = {
    signed: false,
    signatureValid: false,
    coversWholeFile: false,
    trusted: trustAnchors.length > 0 ? false : null,
    subFilter: null,
    signingTime: null,
    timestamp: null,
    signer: null,
    validatedAt: null,
    level: null,
    archiveTimestamps: [],
    evidenceExpiresAt: null,
    problems: [],
    indication: 'TOTAL_PASSED',
    subIndication: null,
  };
  // Only the neighbourhood of the seal's /ByteRange is decoded as text: a large PDF is never copied into a string.
  const text = (start: number, end: number) => pdf.slice(Math.max(0, start), Math.min(pdf.length, end))?.toString('latin1') ?? '';
  // The seal is read from its signature dictionary through the cross-reference of the revision it ends
  // (src/evidence/long-term.ts): never from text found in file order.
  const found = findSeal(pdf);
  if ('problem' in found) {
    fail(result, found.problem, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  const seal = found.seal;
  result.signed = true;
  const [a, b, c, d] = seal.byteRange;
  if (a !== 0 || b <= 0 || c <= b || d < 0 || c + d > pdf.length || text(b, b + 1) !== '<' || text(c - 1, c) !== '>') {
    fail(result, `the signature's /ByteRange [${a} ${b} ${c} ${d}] does not frame its /Contents`, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  // The sealed revision must read alike in every reader; after the seal, revisions may add validation data and
  // document time-stamps (B-LT, B-LTA), and nothing else.
  let longTerm: LongTermData | undefined;
  result.coversWholeFile = c + d === pdf.length;
  try {
    const read = await readLongTermData(pdf, seal);
    if (!result.coversWholeFile) longTerm = read;
    result.coversWholeFile = true;
  } catch (err) {
    const message = (err as Error).message;
    const problem =
      err instanceof SealedRevisionError
        ? message
        : `${pdf.length - (c + d)} byte(s) were added after signing (the signature covers bytes up to ${c + d}): ${message}`;
    fail(result, problem, 'TOTAL_FAILED', 'FORMAT_FAILURE');
  }
  // From the signature dictionary as the sealed revision has it: bytes appended after the seal do not speak for it.
  result.subFilter = seal.subFilter?.slice(1) ?? null;
  result.signingTime = pdfDate(seal.signingTime);

  const value = pdf.slice(b + 1, c - 1);
  const hex = value?.toString('latin1').replace(/\s+/g, '');
  if (hex === undefined || !/^[0-9a-fA-F]*$/.test(hex)) {
    const why = hex === undefined ? `lies outside ${pdf.held}, all a check of a file this large reads` : 'is not a hexadecimal string';
    fail(result, `the signature value ${why}`, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  let signedData: pkijs.SignedData;
  try {
    signedData = readSignedData(Buffer.from(hex, 'hex'));
  } catch (err) {
    fail(result, `the signature value is not a readable CMS signature: ${(err as Error).message}`, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  // A seal signs the document's bytes, detached (PAdES, ETSI EN 319 142-1 6.3): a CMS with content of its own (a
  // time-stamp token lifted from another seal) signs that content, not this document.
  const notDetached = detachedProblem(signedData);
  if (notDetached) {
    fail(result, notDetached, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  // Judged before any digest is taken, so that the whole file and the one pass (which takes SHA-256 alone) say the
  // same of every seal.
  const digest = digestProblem(signedData);
  if (digest) {
    fail(result, digest.problem, digest.indication, digest.sub);
    return result;
  }

  // A valid time-stamp fixes when the signature existed: the signer's certificate is judged at that time, so a
  // seal still verifies after its certificate expired (validation at the time vouched for, ETSI EN 319 102-1).
  // The document time-stamps first: the oldest one says when the signature's time-stamp still had to hold.
  const lt = longTerm ? await checkLongTerm(pdf, longTerm, c + d, trust, at) : undefined;
  const firstArchive = lt?.archiveTimes[0];
  const signer = signedData.signerInfos[0];
  // Certificates the /DSS carries complete a path the CMS leaves short; they are never trusted for themselves.
  const pool = readCertificates(longTerm?.dss.certs ?? []);
  const stamp = signer ? await checkSignatureTimestamp(signer, trust.timestamping, firstArchive ? new Date(firstArchive) : at, pool) : null;
  let validatedAt = at;
  if (stamp) {
    result.timestamp = stamp.timestamp;
    if (stamp.timestamp && new Date(stamp.timestamp.time).getTime() > at.getTime() + 60_000) {
      stamp.problems.push(`the signature time-stamp claims ${stamp.timestamp.time}, after the time of checking`);
    }
    if (stamp.timestamp && stamp.problems.length === 0) validatedAt = new Date(stamp.timestamp.time);
  }
  result.validatedAt = validatedAt.toISOString();

  const verified = await verifyCms(signedData, pdf.span(b, c, d), trustAnchors, validatedAt, pool);
  result.signatureValid = verified.signatureValid;
  if (verified.signer) result.signer = summarize(verified.signer);
  if (!verified.signatureValid || !verified.signer || !signer) {
    const sub = /digest/i.test(verified.message) ? 'HASH_FAILURE' : 'SIG_CRYPTO_FAILURE';
    fail(result, `the signature does not verify: ${verified.message}`, 'TOTAL_FAILED', sub);
    return result;
  }
  // What the certificate is for (a TLS server's or a time-stamping authority's certificate seals nothing), and
  // that the signature names it in what it signs (ESS signing-certificate-v2: a substituted certificate shows).
  for (const problem of sealCertificateProblems(verified.signer))
    fail(result, `the seal's certificate: ${problem}`, 'INDETERMINATE', 'CHAIN_CONSTRAINTS_FAILURE');
  const ess = essProblem(signer, verified.signer, { requireV2: true });
  if (ess) fail(result, `the seal: ${ess}`, 'INDETERMINATE', 'SIG_CONSTRAINTS_FAILURE');
  if (result.problems.length > 0) return result;
  result.trusted = verified.trusted;
  // Chaining to an anchor says only that some CA vouched for the key; the provider's own sealing keys are pinned, so
  // that no other subscriber of that CA (a public one, in production) can seal a forged document.
  const pin = verified.trusted && trust.seal.pins.length > 0 ? spkiSha256(verified.signer) : undefined;
  if (pin && !trust.seal.pins.includes(pin)) {
    result.trusted = false;
    fail(
      result,
      `the seal's key (${formatPin(pin)}) is not one of the provider's pinned sealing keys (ESIGN_SEAL_PINS)`,
      'INDETERMINATE',
      'CHAIN_CONSTRAINTS_FAILURE',
    );
    return result;
  }
  if (verified.trusted === false) {
    // A time-stamp that no longer vouches left the certificate to be judged now, past its end: out of bounds.
    const lapsed = stamp?.timestamp && validatedAt === at && stamp.problems.some((p) => /no longer vouches/.test(p));
    fail(
      result,
      `the signer's certificate does not chain to a trust anchor: ${verified.message}`,
      'INDETERMINATE',
      lapsed ? 'OUT_OF_BOUNDS_NO_POE' : 'NO_CERTIFICATE_CHAIN_FOUND',
    );
  }
  // The cryptographic floor, at the time the signature is proven to have existed.
  const weak = [
    ...signerInfoAlgorithmProblems('the seal', signer, verified.signer, validatedAt),
    ...(verified.chain ? chainAlgorithmProblems(verified.chain, validatedAt) : []),
  ];
  for (const problem of weak) fail(result, problem, 'INDETERMINATE', 'CRYPTO_CONSTRAINTS_FAILURE_NO_POE');
  // A broken or untrusted time-stamp is a problem like a broken seal: nothing proves when the signature existed.
  for (const problem of stamp?.problems ?? []) fail(result, problem, 'INDETERMINATE', 'NO_POE');
  result.level = result.timestamp && stamp?.problems.length === 0 ? 'B-T' : 'B-B';
  if (lt) {
    for (const problem of lt.problems) fail(result, problem, 'INDETERMINATE', 'NO_POE');
    result.archiveTimestamps = lt.archiveTimes;
  }
  // Revocation, read from what the file carries (its /DSS and the CMS's own): every certificate on the seal's
  // path and on each time-stamping authority's, at the time its signature or token is proven to have existed.
  const sources = revocationSources(longTerm, signedData);
  // A time-stamp's genTime is its authority's own claim: whether that authority was revoked is judged against the
  // next time-stamp's time (or the check's), never against the time its possibly compromised key asserts.
  const archiveTimes = lt?.held.map((h) => h.genTime) ?? [];
  const paths: { label: string; chain: pkijs.Certificate[]; poe: Date; provenBy: Date; optional: boolean }[] = [
    ...(verified.chain ? [{ label: 'the seal', chain: verified.chain, poe: validatedAt, provenBy: validatedAt, optional: false }] : []),
    ...(stamp?.chain && stamp.genTime && stamp.problems.length === 0
      ? [{ label: 'the signature time-stamp', chain: stamp.chain, poe: stamp.genTime, provenBy: archiveTimes[0] ?? at, optional: false }]
      : []),
    // The newest document time-stamp's own validation data can only follow it, outside anything time-stamped: the
    // upkeep's next renewal gathers it. So its authority's revocation is judged when the file carries it and is not
    // required; every older time-stamp's is.
    ...(lt?.held.map((h, i, all) => ({
      label: h.label,
      chain: h.chain,
      poe: h.genTime,
      provenBy: archiveTimes[i + 1] ?? at,
      optional: i === all.length - 1,
    })) ?? []),
  ];
  let established = paths.length > 0;
  for (const path of paths) {
    for (const refusal of await pathRevocation(path, sources, at)) {
      established = false;
      fail(result, refusal.problem, 'INDETERMINATE', refusal.sub);
    }
  }
  if (lt && result.level === 'B-T' && established && longTerm && longTerm.dss.ocsps.length + longTerm.dss.crls.length > 0) {
    result.level = lt.archiveTimes.length > 0 ? 'B-LTA' : 'B-LT';
  }
  const expiresAt = lt?.newest?.expiresAt ?? (stamp?.problems.length === 0 ? stamp.expiresAt?.toISOString() : undefined);
  result.evidenceExpiresAt = expiresAt ?? null;
  // Without trust anchors nothing establishes the chain: not a problem under `warn`, but not a pass either.
  if (result.indication === 'TOTAL_PASSED' && result.trusted === null) {
    result.indication = 'INDETERMINATE';
    result.subIndication = 'NO_CERTIFICATE_CHAIN_FOUND';
  }
  return result;
}

/**
 * Why a certification path cannot be relied on for what its revocation data says: a certificate revoked at or
 * before `provenBy` (REVOKED_NO_POE), or one whose status no data from its issuer, issued after `poe`, establishes
 * (TRY_LATER). The anchor, last, is trusted for itself. A revocation after `provenBy` does not count against what
 * was proven to exist before it (EN 319 102-1, past signature validation).
 */
async function pathRevocation(
  path: {
    label: string;
    chain: readonly pkijs.Certificate[];
    /** When the signature or token existed: data must be issued after it. */
    poe: Date;
    /** What proves it existed, other than the key judged: a revocation at or before it refuses. */
    provenBy: Date;
    /** true: a status no data establishes is no refusal (a revocation the data shows still is). */
    optional: boolean;
  },
  sources: RevocationSources,
  at: Date,
): Promise<{ problem: string; sub: SubIndication }[]> {
  const { label, chain, poe, provenBy, optional } = path;
  const refusals: { problem: string; sub: SubIndication }[] = [];
  for (let i = 0; i + 1 < chain.length; i++) {
    const cert = chain[i]!;
    const name = `"${summarize(cert).subject}"`;
    const verdict = await revocationStatus(cert, chain[i + 1]!, sources, poe, at, provenBy);
    if (verdict.status === 'revoked' && verdict.revokedBeforePoe !== false) {
      refusals.push({
        problem: `${label}: the certificate ${name} was revoked at ${verdict.revokedAt ?? '(unknown time)'}${verdict.reason ? ` (${verdict.reason})` : ''}, before ${provenBy.toISOString()}, when it is proven to have signed`,
        sub: 'REVOKED_NO_POE',
      });
    } else if (verdict.status === 'unknown' && !optional) {
      const why = verdict.problems.length > 0 ? `: ${verdict.problems.slice(0, 3).join('; ')}` : ' (the file carries none for it)';
      refusals.push({ problem: `${label}: no revocation data establishes that ${name} was not revoked${why}`, sub: 'TRY_LATER' });
    }
  }
  return refusals;
}

/** Revocation data the file carries: its /DSS's, and any the seal's CMS holds itself (RFC 5652 RevocationInfoChoices). */
function revocationSources(longTerm: LongTermData | undefined, signedData: pkijs.SignedData): RevocationSources {
  const ocsps = [...(longTerm?.dss.ocsps ?? [])];
  const crls = [...(longTerm?.dss.crls ?? [])];
  for (const item of signedData.crls ?? []) {
    try {
      if (item instanceof pkijs.CertificateRevocationList) crls.push(Buffer.from((item.toSchema() as asn1js.Sequence).toBER(false)));
      else if (item.otherRevInfoFormat === '1.3.6.1.5.5.7.16.2')
        ocsps.push(Buffer.from((item.otherRevInfo as asn1js.BaseBlock).toBER(false)));
    } catch {
      // Unreadable revocation data is no data: what it would have established stays unknown.
    }
  }
  return { ocsps, crls };
}

/** Why a seal's CMS is not a detached signature over data (with the signed content type saying so), if it is not. */
function detachedProblem(signedData: pkijs.SignedData): string | undefined {
  const content = signedData.encapContentInfo;
  if (content.eContentType !== OID.data || content.eContent) {
    return `the signature is not a detached signature over the document (its content is ${content.eContent ? 'embedded' : 'of another type'}: ${content.eContentType})`;
  }
  const attributes = signedData.signerInfos[0]?.signedAttrs?.attributes ?? [];
  const contentType = attributes.find((a) => a.type === OID.contentType)?.values[0] as asn1js.ObjectIdentifier | undefined;
  if (contentType?.valueBlock.toString() !== OID.data) return 'the signed content-type attribute does not say the signature is over data';
  return undefined;
}

const SIGNING_TIME = '1.2.840.113549.1.9.5';
const SHA1 = '1.3.14.3.2.26';

/**
 * What a PAdES baseline seal's signer may not be: one whose signed attributes claim a signing-time (EN 319 142-1
 * 5.2.2 forbids it: the time is the dictionary's /M, or a time-stamp's), or one digested other than with SHA-256.
 * SHA-1 is below the cryptographic floor; SHA-384 and SHA-512 are sound, but the archive's one pass over a download
 * takes SHA-256 alone (the provider's seals use it), and a seal it could not check in that pass is refused in both
 * readings rather than judged two ways.
 */
function digestProblem(
  signedData: pkijs.SignedData,
): { problem: string; indication: Exclude<Indication, 'TOTAL_PASSED'>; sub: SubIndication } | undefined {
  const signer = signedData.signerInfos[0];
  if (signer?.signedAttrs?.attributes.some((a) => a.type === SIGNING_TIME)) {
    return {
      problem: 'the seal claims a signing-time attribute, which a PAdES baseline signature may not carry (EN 319 142-1 5.2.2)',
      indication: 'TOTAL_FAILED',
      sub: 'FORMAT_FAILURE',
    };
  }
  const algorithm = signer?.digestAlgorithm.algorithmId;
  if (algorithm === OID.sha256) return undefined;
  if (algorithm === SHA1) {
    return {
      problem: 'the seal digests the document with SHA-1, below the cryptographic floor',
      indication: 'INDETERMINATE',
      sub: 'CRYPTO_CONSTRAINTS_FAILURE_NO_POE',
    };
  }
  return {
    problem: `the seal digests the document with ${algorithm ?? 'no algorithm'}; the archive checks seals digested with SHA-256`,
    indication: 'TOTAL_FAILED',
    sub: 'FORMAT_FAILURE',
  };
}

/** `D:YYYYMMDDHHmmSS+HH'mm'` (PDF 32000 7.9.4) → ISO 8601, or null when it cannot be read. */
function pdfDate(value: string | undefined): string | null {
  const m = value && /^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-])?(\d{2})?'?(\d{2})?'?$/.exec(value);
  if (!m) return null;
  const [, y, mo = '01', da = '01', h = '00', mi = '00', s = '00', sign, oh = '00', om = '00'] = m;
  const offset = !sign || sign === 'Z' ? 'Z' : `${sign}${oh}:${om}`;
  const date = new Date(`${y}-${mo}-${da}T${h}:${mi}:${s}${offset}`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
