import { createHash } from 'node:crypto';
import { chainProblem } from '../esign/audit-chain.js';
import { AUDIT_TRAIL_ENTRY, AUDIT_TRAIL_FORMAT, AuditTrail, COMPLETION_CERTIFICATE_ENTRY, type CertificateRef } from '../esign/evidence.js';
import { embeddedFile } from '../evidence/embedded-files.js';
import { checkPdfSignature, type PdfSignatureCheck } from '../evidence/pades-verify.js';
import type { ArchiveEvidence, SignatureEvidence, SignaturePolicy } from '../evidence/report.js';
import { summarize, type CertificateSummary } from '../evidence/pki.js';
import { formatPin, trustAnchorsOnly, type TrustPolicy } from '../evidence/trust.js';
import type { PdfBytes } from '../evidence/pdf-bytes.js';
import { StreamedPdf, type StreamedPdfOptions } from '../evidence/pdf-stream.js';
import { holdWhole, type EntryInspector, type VerifiedEntry } from './zip-verify.js';

export type { ArchiveEvidence, DocumentEvidence, SignatureEvidence, SignaturePolicy, ValidationReport } from '../evidence/report.js';

export interface EvidencePolicy {
  signatures: SignaturePolicy;
  /** Whom seals, time-stamps and revocation data must come from (the sandbox's in the dev stack, the provider's in production). */
  trust: TrustPolicy;
  /** Refuse a ZIP without the provider's certificate of completion and audit trail. */
  requireCompletionCertificate: boolean;
}

export const NO_EVIDENCE_POLICY: EvidencePolicy = { signatures: 'off', trust: trustAnchorsOnly([]), requireCompletionCertificate: false };

/** Why a completed ZIP cannot be archived; the archive activity turns it into a non-retryable ArchiveInvalid. */
export class EvidenceRejected extends Error {
  override readonly name = 'EvidenceRejected';
}

export interface ExpectedDocument {
  title: string;
  StoragePath: string;
  sha256?: string;
}

/** The transaction a completed ZIP must be the record of, as the workflow knows it. */
export interface ExpectedCompletion {
  transactionId: string;
  esignId: string;
  /** The participants the workflow created, when it knows them (a late completion no workflow owns does not). */
  participantIds?: readonly string[];
  /** In order; `sha256` is what we uploaded. */
  documents: readonly ExpectedDocument[];
}

/**
 * Checks the evidence of a completed ZIP while it is read (one entry at a
 * time): every entry's seal, the audit trail, and that each signed document
 * is the one we uploaded (`pdfPass`: how much of a PDF that pass holds; the defaults
 * suit production, tests lower them). `inspector` goes to verifyZip; `conclude` runs
 * after the pass and returns what the manifest records, or throws
 * EvidenceRejected.
 *
 * Under `require` it fails closed: every entry is read whatever its name,
 * each document we uploaded is found by the audit trail's list and its hash
 * and must carry a valid, trusted seal over the whole file, the provider's
 * record of its original must equal our upload's hash, and an entry that is
 * neither one of our documents nor the provider's evidence is refused. What
 * cannot be established (no audit trail) is refused with its reason, never
 * passed as not checked. A document without a hash of ours (`originalSha256:
 * null`) is one we have no record of uploading: the transaction workflow
 * refuses such input under `require`, so only a completion no workflow owns
 * gets here, and the manifest says so.
 */
export function evidenceCheck(
  completion: ExpectedCompletion,
  policy: EvidencePolicy,
  now: () => Date = () => new Date(),
  pdfPass: StreamedPdfOptions = {},
): { inspector: EntryInspector; conclude(entries: readonly VerifiedEntry[]): ArchiveEvidence } {
  const expected = completion.documents;
  const signatures = new Map<string, SignatureEvidence>();
  let trail: AuditTrail | undefined;
  /** SHA-256 of the audit trail embedded in the certificate of completion: null when it embeds none. */
  let sealedTrail: { sha256: string } | null | undefined;

  const readTrail = async (_entry: VerifiedEntry, content: Buffer): Promise<void> => {
    {
      let json: unknown;
      try {
        json = JSON.parse(content.toString('utf8'));
      } catch (err) {
        throw new EvidenceRejected(`${AUDIT_TRAIL_ENTRY} is not JSON: ${(err as Error).message}`);
      }
      const parsed = AuditTrail.safeParse(json);
      if (!parsed.success) throw new EvidenceRejected(`${AUDIT_TRAIL_ENTRY} is not an audit trail: ${parsed.error.issues[0]?.message}`);
      trail = parsed.data;
    }
  };
  /** Checks an entry's seal; false when it is no PDF. */
  const seal = async (entry: VerifiedEntry, pdf: Buffer | PdfBytes): Promise<boolean> => {
    if (!(Buffer.isBuffer(pdf) ? pdf.subarray(0, 5) : pdf.slice(0, 5))?.equals(PDF_MAGIC)) {
      // Another JSON entry than the audit trail: nothing to seal-check, and no document can be it.
      signatures.set(entry.name, { ...notChecked(), result: 'invalid', problems: ['not a PDF'] });
      return false;
    }
    const check = await checkPdfSignature(pdf, policy.trust, now());
    const evidence = toEvidence(check);
    if (evidence.result === 'invalid' && policy.signatures === 'require') {
      throw new EvidenceRejected(`"${entry.name}": ${check.problems.join('; ')}`);
    }
    signatures.set(entry.name, evidence);
    return true;
  };
  const readCertificate = async (entry: VerifiedEntry, content: Buffer): Promise<void> => {
    if (!(await seal(entry, content))) return;
    const embedded = await embeddedFile(content, AUDIT_TRAIL_ENTRY).catch(() => null);
    sealedTrail = embedded ? { sha256: createHash('sha256').update(embedded).digest('hex') } : null;
  };
  // With signatures off, only the audit trail is read into memory; the rest streams past. Otherwise every entry
  // is read, whatever its name: a document renamed "Contract" is a document all the same. The audit trail and
  // the certificate of completion (whose embedded trail pdf-lib reads) are held whole; every other entry goes
  // through one pass that keeps what its seal check needs and, for a large file, only that.
  const inspector: EntryInspector = {
    open: (name) => {
      if (name === AUDIT_TRAIL_ENTRY) return holdWhole(readTrail);
      if (policy.signatures === 'off') return undefined;
      if (name === COMPLETION_CERTIFICATE_ENTRY) return holdWhole(readCertificate);
      const pass = new StreamedPdf(pdfPass);
      return {
        update: (chunk) => pass.update(chunk),
        sha256: () => pass.sha256(),
        inspect: (entry) => seal(entry, pass.bytes()).then(() => undefined),
      };
    },
  };
  const require = policy.signatures === 'require';

  const conclude = (entries: readonly VerifiedEntry[]): ArchiveEvidence => {
    const byName = new Map(entries.map((e) => [e.name, e]));
    const certificate = byName.get(COMPLETION_CERTIFICATE_ENTRY);
    const trailEntry = byName.get(AUDIT_TRAIL_ENTRY);
    if (policy.requireCompletionCertificate && (!certificate || !trailEntry)) {
      throw new EvidenceRejected(
        `the ZIP has no ${!certificate ? COMPLETION_CERTIFICATE_ENTRY : AUDIT_TRAIL_ENTRY}, which the evidence policy requires`,
      );
    }
    if (require && !trail) {
      throw new EvidenceRejected(
        `the ZIP has no ${AUDIT_TRAIL_ENTRY}: under the require policy each document must be tied to our upload by the provider's record`,
      );
    }
    const documents = trail ? fromTrail(trail, expected, byName) : fromEntries(expected, entries);
    const trailProblems =
      trail && trailEntry
        ? [
            ...trailIntegrity(trail, trailEntry, policy.signatures === 'off' ? 'not-read' : certificate ? sealedTrail : undefined),
            ...trailBinding(trail, completion, policy.signatures === 'off' ? undefined : [...signatures.values()]),
          ]
        : [];
    if (require && trailProblems.length > 0) throw new EvidenceRejected(trailProblems.join('; '));
    const accounted = new Set([...documents.map((d) => d.entry.name), COMPLETION_CERTIFICATE_ENTRY, AUDIT_TRAIL_ENTRY]);
    const unaccounted = entries.map((e) => e.name).filter((name) => !accounted.has(name));
    if (require) {
      if (unaccounted.length > 0) {
        throw new EvidenceRejected(
          `the ZIP holds ${unaccounted.map((n) => `"${n}"`).join(', ')}, which is neither one of our documents nor evidence`,
        );
      }
      const sealOf = certificate && signatures.get(certificate.name);
      if (certificate && (sealOf?.result !== 'valid' || sealOf.trusted !== true)) {
        throw new EvidenceRejected(
          `${COMPLETION_CERTIFICATE_ENTRY} is not validly sealed: ${sealOf?.problems.join('; ') ?? 'not checked'}`,
        );
      }
      for (const [i, { e, entry }] of documents.entries()) {
        const label = `document ${i + 1} ("${e.title}")`;
        const seal = signatures.get(entry.name);
        if (seal?.result !== 'valid' || seal.trusted !== true) {
          throw new EvidenceRejected(
            `${label}: "${entry.name}" ${seal ? `is not validly sealed: ${seal.problems.join('; ')}` : 'was not checked'}`,
          );
        }
      }
    }
    return {
      policy: {
        signatures: policy.signatures,
        trustAnchors: policy.trust.seal.anchors.map((c) => summarize(c).sha256),
        sealPins: policy.trust.seal.pins.map(formatPin),
        timestampingAnchors: policy.trust.timestamping.map((c) => summarize(c).sha256),
        requireCompletionCertificate: policy.requireCompletionCertificate,
      },
      documents: documents.map(({ e, entry, providerOriginalSha256 }) => ({
        title: e.title,
        entry: entry.name,
        bytes: entry.bytes,
        originalSha256: e.sha256 ?? null,
        providerOriginalSha256,
        finalSha256: entry.sha256,
        signature: signatures.get(entry.name) ?? notChecked(),
      })),
      certificateOfCompletion: certificate
        ? {
            entry: certificate.name,
            bytes: certificate.bytes,
            sha256: certificate.sha256,
            signature: signatures.get(certificate.name) ?? notChecked(),
          }
        : null,
      auditTrail:
        trailEntry && trail
          ? {
              entry: trailEntry.name,
              bytes: trailEntry.bytes,
              sha256: trailEntry.sha256,
              events: trail.events.length,
              head: trail.chain?.head ?? null,
              problems: trailProblems,
            }
          : null,
      ...(unaccounted.length > 0 ? { unaccounted } : {}),
    };
  };
  return { inspector, conclude };
}

const PDF_MAGIC = Buffer.from('%PDF-');

/** The SHA-256 of the trail sealed in the certificate; null: it embeds none; undefined: no certificate; not-read: signatures off. */
type SealedCopy = { sha256: string } | null | undefined | 'not-read';

/**
 * Why the audit trail cannot be trusted as the provider's record: its hash chain breaks, or it is not the copy
 * sealed in the certificate of completion (`sealed`: that copy's SHA-256, null when the certificate embeds none,
 * undefined when there is no certificate, 'not-read' when signatures are off).
 */
function trailIntegrity(trail: AuditTrail, entry: VerifiedEntry, sealed: SealedCopy): string[] {
  const problems: string[] = [];
  if (trail.format !== AUDIT_TRAIL_FORMAT || !trail.chain) problems.push(`${AUDIT_TRAIL_ENTRY} is not hash-chained (${trail.format})`);
  else {
    const broken = chainProblem(trail.transaction.id, trail.events, trail.chain.head);
    if (broken) problems.push(`${AUDIT_TRAIL_ENTRY}: ${broken}`);
  }
  if (sealed === 'not-read') return problems; // signatures off: the certificate is not read
  if (sealed === null) problems.push(`${COMPLETION_CERTIFICATE_ENTRY} does not embed the audit trail, so nothing seals it`);
  else if (sealed === undefined) problems.push(`no sealed copy of ${AUDIT_TRAIL_ENTRY} was read (no certificate of completion)`);
  else if (sealed.sha256 !== entry.sha256) {
    problems.push(
      `${AUDIT_TRAIL_ENTRY} is not the copy sealed in ${COMPLETION_CERTIFICATE_ENTRY} (SHA-256 ${entry.sha256}, sealed ${sealed.sha256})`,
    );
  }
  return problems;
}

/**
 * Why the audit trail is not the record of this transaction's completion: a genuine ZIP of another transaction
 * (same upload, same hash) must not pass for this one's, nor a trail that ends in a decline or a cancel, nor one
 * whose `seal` names another certificate than the one that sealed (`sealed`: the seals read; undefined when
 * signatures are off).
 */
function trailBinding(trail: AuditTrail, completion: ExpectedCompletion, sealed: readonly SignatureEvidence[] | undefined): string[] {
  const problems: string[] = [];
  if (trail.transaction.id !== completion.transactionId) {
    problems.push(`${AUDIT_TRAIL_ENTRY} is the record of transaction ${trail.transaction.id}, not of ${completion.transactionId}`);
  }
  if (trail.transaction.esignId !== completion.esignId) {
    problems.push(`${AUDIT_TRAIL_ENTRY} is the record of esignId ${trail.transaction.esignId}, not of ${completion.esignId}`);
  }
  if (completion.participantIds) {
    const ours = [...completion.participantIds].sort();
    const theirs = trail.participants.map((p) => p.id).sort();
    if (ours.length !== theirs.length || ours.some((id, i) => id !== theirs[i])) {
      problems.push(`${AUDIT_TRAIL_ENTRY} lists ${theirs.length} participant(s) that are not this transaction's ${ours.length}`);
    }
  }
  const last = trail.events.at(-1)?.type;
  if (last !== 'completed') problems.push(`${AUDIT_TRAIL_ENTRY} does not end in completion (its last event is ${last ?? 'none'})`);
  const ended = trail.events.find((e) => e.type === 'declined');
  if (ended) problems.push(`${AUDIT_TRAIL_ENTRY} records a decline (event ${ended.seq}): the transaction did not complete`);
  const others = (sealed ?? []).filter((s) => s.signer && s.signer.sha256 !== trail.seal.sha256);
  if (others.length > 0) {
    problems.push(
      `${AUDIT_TRAIL_ENTRY} names the seal ${trail.seal.sha256}, but ${others.length} PDF(s) are sealed by another certificate`,
    );
  }
  return problems;
}

type Matched = { e: ExpectedDocument; entry: VerifiedEntry; providerOriginalSha256: string | null };

/** With an audit trail: documents in the trail's order, each checked against what we uploaded and what the ZIP holds. */
function fromTrail(trail: AuditTrail, expected: readonly ExpectedDocument[], byName: Map<string, VerifiedEntry>): Matched[] {
  if (trail.documents.length !== expected.length) {
    throw new EvidenceRejected(`the audit trail lists ${trail.documents.length} document(s) for ${expected.length} uploaded`);
  }
  const claimed = new Set<string>();
  return expected.map((e, i) => {
    const d = trail.documents.find((x) => x.index === i);
    const label = `document ${i + 1} ("${e.title}")`;
    if (!d) throw new EvidenceRejected(`the audit trail does not list ${label}`);
    const entry = byName.get(d.entry);
    if (!entry) throw new EvidenceRejected(`the audit trail names "${d.entry}" for ${label}, which the ZIP does not hold`);
    if (entry.name === COMPLETION_CERTIFICATE_ENTRY || entry.name === AUDIT_TRAIL_ENTRY || claimed.has(entry.name)) {
      throw new EvidenceRejected(`the audit trail names "${d.entry}" for ${label}, which is already another entry's`);
    }
    claimed.add(entry.name);
    if (d.original.storagePath !== e.StoragePath) {
      throw new EvidenceRejected(`${label} was signed from ${d.original.storagePath}, not from our upload ${e.StoragePath}`);
    }
    if (e.sha256 && d.original.sha256 !== e.sha256) {
      throw new EvidenceRejected(
        `${label}: the provider signed an original with SHA-256 ${d.original.sha256}, but we uploaded ${e.sha256}`,
      );
    }
    if (d.final.sha256 !== entry.sha256) {
      throw new EvidenceRejected(`${label}: "${entry.name}" has SHA-256 ${entry.sha256}, the audit trail says ${d.final.sha256}`);
    }
    return { e, entry, providerOriginalSha256: d.original.sha256 };
  });
}

/** Without one (a provider that sends none): the ZIP's PDFs, evidence aside, in order. */
function fromEntries(expected: readonly ExpectedDocument[], entries: readonly VerifiedEntry[]): Matched[] {
  const pdfs = entries.filter((x) => x.name.toLowerCase().endsWith('.pdf') && x.name !== COMPLETION_CERTIFICATE_ENTRY);
  if (pdfs.length !== expected.length) {
    throw new EvidenceRejected(`completed ZIP holds ${pdfs.length} PDF(s) for ${expected.length} document(s)`);
  }
  return expected.map((e, i) => ({ e, entry: pdfs[i]!, providerOriginalSha256: null }));
}

function notChecked(): SignatureEvidence {
  return { result: 'not-checked', problems: [], signer: null, signingTime: null, timestamp: null, subFilter: null, trusted: null };
}

function toEvidence(check: PdfSignatureCheck): SignatureEvidence {
  return {
    result: check.problems.length === 0 ? 'valid' : 'invalid',
    problems: check.problems,
    signer: check.signer ? certificate(check.signer) : null,
    signingTime: check.signingTime,
    timestamp: check.timestamp ? { time: check.timestamp.time, authority: certificate(check.timestamp.authority) } : null,
    subFilter: check.subFilter,
    trusted: check.trusted,
    validatedAt: check.validatedAt,
    validation: {
      level: check.level,
      indication: check.indication,
      subIndication: check.subIndication,
      time: check.timestamp?.time ?? null,
      evidenceExpiresAt: check.evidenceExpiresAt,
    },
  };
}

const certificate = ({ subject, issuer, sha256 }: CertificateSummary): CertificateRef => ({ subject, issuer, sha256 });
