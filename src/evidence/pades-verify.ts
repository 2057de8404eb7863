import type * as asn1js from 'asn1js';
import type * as pkijs from 'pkijs';
import { readSignedData } from './cms-read.js';
import { OID, verifyCms } from './cms.js';
import { wholePdf, type PdfBytes } from './pdf-bytes.js';
import type { Indication, SubIndication } from './report.js';
import { summarize, type CertificateSummary } from './pki.js';
import { checkLongTerm } from './archive-timestamps.js';
import { readLongTermData, type LongTermData } from './long-term.js';
import { checkSignatureTimestamp, timeStampingOnly, type TimestampSummary } from './timestamp.js';
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

const BYTE_RANGE = /\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g;

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
  const rangeAt = sealRangeAt(pdf);
  const last = rangeAt === -1 ? null : new RegExp(BYTE_RANGE.source).exec(text(rangeAt, rangeAt + 200));
  if (!last) {
    const problem = pdf.partial ? `no signature is found in ${pdf.held}, all a check of a file this large reads` : 'the PDF is not signed';
    fail(result, problem, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  result.signed = true;
  const [a, b, c, d] = last.slice(1, 5).map(Number) as [number, number, number, number];
  if (a !== 0 || b <= 0 || c <= b || d < 0 || c + d > pdf.length || text(b, b + 1) !== '<' || text(c - 1, c) !== '>') {
    fail(result, `the signature's /ByteRange [${a} ${b} ${c} ${d}] does not frame its /Contents`, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    return result;
  }
  // After the seal, revisions may add validation data and document time-stamps (B-LT, B-LTA), and nothing else.
  let longTerm: LongTermData | undefined;
  result.coversWholeFile = c + d === pdf.length;
  if (!result.coversWholeFile) {
    try {
      longTerm = await readLongTermData(pdf, c + d);
      result.coversWholeFile = true;
    } catch (err) {
      const added = `${pdf.length - (c + d)} byte(s) were added after signing (the signature covers bytes up to ${c + d}): ${(err as Error).message}`;
      fail(result, added, 'TOTAL_FAILED', 'FORMAT_FAILURE');
    }
  }
  // The signature dictionary surrounds /ByteRange and /Contents: its other keys are read from just around them.
  const before = text(Math.min(rangeAt, b) - 4096, Math.min(rangeAt, b));
  // Only what the seal covers: bytes appended after it (a comment in a later update) must not speak for it.
  const after = text(c, Math.min(c + d, c + 4096));
  const around = `${before}${text(rangeAt, rangeAt + 200)}${after}`;
  result.subFilter = /\/SubFilter\s*\/([A-Za-z0-9.]+)/.exec(around)?.[1] ?? null;
  result.signingTime = pdfDate(/\/M\s*\((D:[^)]*)\)/.exec(after)?.[1] ?? /\/M\s*\((D:[^)]*)\)/.exec(around)?.[1]);

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

  // A valid time-stamp fixes when the signature existed: the signer's certificate is judged at that time, so a
  // seal still verifies after its certificate expired (validation at the time vouched for, ETSI EN 319 102-1).
  // The document time-stamps first: the oldest one says when the signature's time-stamp still had to hold.
  const lt = longTerm ? await checkLongTerm(pdf, longTerm, c + d, trust, at) : undefined;
  const firstArchive = lt?.archiveTimes[0];
  const signer = signedData.signerInfos[0];
  const stamp = signer ? await checkSignatureTimestamp(signer, trust.timestamping, firstArchive ? new Date(firstArchive) : at) : null;
  let validatedAt = at;
  if (stamp) {
    result.timestamp = stamp.timestamp;
    if (stamp.timestamp && new Date(stamp.timestamp.time).getTime() > at.getTime() + 60_000) {
      stamp.problems.push(`the signature time-stamp claims ${stamp.timestamp.time}, after the time of checking`);
    }
    if (stamp.timestamp && stamp.problems.length === 0) validatedAt = new Date(stamp.timestamp.time);
  }
  result.validatedAt = validatedAt.toISOString();

  const verified = await verifyCms(signedData, pdf.span(b, c, d), trustAnchors, validatedAt);
  result.signatureValid = verified.signatureValid;
  if (verified.signer) result.signer = summarize(verified.signer);
  if (!verified.signatureValid) {
    const sub = /digest/i.test(verified.message) ? 'HASH_FAILURE' : 'SIG_CRYPTO_FAILURE';
    fail(result, `the signature does not verify: ${verified.message}`, 'TOTAL_FAILED', sub);
    return result;
  }
  if (verified.signer && timeStampingOnly(verified.signer)) {
    fail(
      result,
      "the signer's certificate is for time-stamping alone: it does not seal documents",
      'INDETERMINATE',
      'CHAIN_CONSTRAINTS_FAILURE',
    );
    return result;
  }
  result.trusted = verified.trusted;
  // Chaining to an anchor says only that some CA vouched for the key; the provider's own sealing keys are pinned, so
  // that no other subscriber of that CA (a public one, in production) can seal a forged document.
  const pin = verified.signer && verified.trusted && trust.seal.pins.length > 0 ? spkiSha256(verified.signer) : undefined;
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
  // A broken or untrusted time-stamp is a problem like a broken seal: nothing proves when the signature existed.
  for (const problem of stamp?.problems ?? []) fail(result, problem, 'INDETERMINATE', 'NO_POE');
  result.level = result.timestamp && stamp?.problems.length === 0 ? 'B-T' : 'B-B';
  if (lt) {
    for (const problem of lt.problems) fail(result, problem, 'INDETERMINATE', 'NO_POE');
    result.archiveTimestamps = lt.archiveTimes;
    if (result.level === 'B-T' && lt.validationData) result.level = lt.archiveTimes.length > 0 ? 'B-LTA' : 'B-LT';
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
 * Where the seal's /ByteRange is: the last signature's that is not a document time-stamp, judged by its whole
 * dictionary (its keys come in any order), from its "<<" to the "endobj" after it.
 */
function sealRangeAt(pdf: PdfBytes): number {
  let before = pdf.length;
  for (;;) {
    const at = pdf.lastIndexOf('/ByteRange', before);
    if (at <= 0) return at;
    const head = pdf.slice(Math.max(0, pdf.lastIndexOf('<<', at)), at)?.toString('latin1') ?? '';
    const rest = pdf.slice(at, Math.min(pdf.length, at + DICTIONARY_BYTES))?.toString('latin1') ?? '';
    const end = rest.indexOf('endobj');
    if (!/\/DocTimeStamp|\/ETSI\.RFC3161/.test(head + (end === -1 ? rest : rest.slice(0, end)))) return at;
    before = at;
  }
}

/** Room for a signature dictionary with the largest signature value a seal is given (64 KiB, hex-encoded). */
const DICTIONARY_BYTES = 140 * 1024;

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

/** `D:YYYYMMDDHHmmSS+HH'mm'` (PDF 32000 7.9.4) → ISO 8601, or null when it cannot be read. */
function pdfDate(value: string | undefined): string | null {
  const m = value && /^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-])?(\d{2})?'?(\d{2})?'?$/.exec(value);
  if (!m) return null;
  const [, y, mo = '01', da = '01', h = '00', mi = '00', s = '00', sign, oh = '00', om = '00'] = m;
  const offset = !sign || sign === 'Z' ? 'Z' : `${sign}${oh}:${om}`;
  const date = new Date(`${y}-${mo}-${da}T${h}:${mi}:${s}${offset}`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
