/**
 * What is kept next to each archived ZIP (`manifest.json`), as types only: the archive stores write it, and the
 * client package reads it (downloadArchive) without the stores' code. docs/evidence.md describes it.
 */
import type { ApprovalRecord } from '../definitions/approvals.js';
import type { CorrectionRecord } from '../definitions/corrections.js';
import type { Purged, Retention } from '../definitions/records.js';
import type { ArchiveEvidence } from '../evidence/report.js';

/** What is kept next to each archived ZIP. */
export interface ArchiveManifest {
  referenceId: string;
  transactionId: string;
  esignId: string;
  zip: { name: string; bytes: number; sha256: string };
  documents: { title: string; StoragePath: string; sha256?: string }[];
  /** Every entry of the ZIP, evidence included. */
  files: { name: string; bytes: number; sha256: string }[];
  /** What verification found: each document's seal and hashes, the certificate of completion (docs/evidence.md). */
  evidence?: ArchiveEvidence;
  /**
   * Our own record of what was asked of the provider while the transaction was out: each correction, with who asked,
   * when and what changed (the provider's audit trail in the ZIP says what happened at the provider).
   */
  corrections?: CorrectionRecord[];
  /** Our record of its approval before it was sent: each approver's answer, with when and their comment. */
  approvals?: ApprovalRecord[];
  downloadedAt: string;
  archivedAt: string;
  /** The bulk send it came from, when it did: a legal hold on the batch keeps it. */
  batchId?: string;
  /** How long it is kept (docs/records.md); absent from archives made before retention was recorded. */
  retention?: Retention;
  /**
   * Set when the archive was purged at the end of its retention: the manifest is then its tombstone, the ZIP and
   * renewals are gone, and every personal field (titles, evidence, corrections, approvals) was emptied.
   */
  purged?: Purged;
  /** Each renewal of the long-term evidence (a document time-stamp and fresh validation data), oldest first. */
  renewals?: EvidenceRenewal[];
}

/**
 * One renewal of an archive's long-term evidence (docs/evidence.md, "Upkeep"): for each sealed PDF, a copy of
 * its newest version with fresh validation data and a document time-stamp appended as an incremental update,
 * stored beside the untouched `completed.zip` as `renewals/<id>/<entry>`.
 */
export interface EvidenceRenewal {
  /** 1, 2, …: the renewal's place in `renewals`, and its directory. */
  id: number;
  /** The time the renewal was judged at (the upkeep workflow's clock), ISO 8601. */
  asOf: string;
  /** Why it was due: the newest time-stamp's certificate expires within the horizon, or an operator asked. */
  reason: 'expiring' | 'requested';
  documents: {
    /** The ZIP entry the PDF came from. */
    entry: string;
    /** Where the renewed copy is kept, relative to the archive: `renewals/<id>/<entry>`. */
    file: string;
    bytes: number;
    sha256: string;
    /** SHA-256 of the version it extends (the ZIP entry's, or the previous renewal's): the renewed copy starts with those bytes. */
    extends: string;
    /** The new document time-stamp's time, and until when its certificate chain can be verified. */
    timestampedAt: string;
    evidenceExpiresAt: string;
  }[];
}
