/**
 * The evidence upkeep (docs/evidence.md, "Upkeep"): a Temporal Schedule starts `evidenceUpkeep` every day; it
 * walks the archive and renews the long-term evidence of each sealed PDF whose newest time-stamp's certificate
 * chain ends within the horizon. Shared by the workflow, its activities, the worker and the CLI; no Node APIs.
 */

export const EVIDENCE_UPKEEP_WORKFLOW_TYPE = 'evidenceUpkeep';
export const EVIDENCE_UPKEEP_SCHEDULE_ID = 'esign-evidence-upkeep';
export const EVIDENCE_UPKEEP_WORKFLOW_ID = 'esign-evidence-upkeep';

export interface EvidenceUpkeepInput {
  /** Resume after this archive key (a continued run). */
  after?: string;
  /** Counts so far (a continued run). */
  totals?: EvidenceUpkeepTotals;
}

export interface EvidenceUpkeepTotals {
  /** Archives looked at. */
  checked: number;
  /** Archives with a new renewal. */
  renewed: number;
  /** Archives whose evidence no longer holds: a renewal cannot help, an operator must look (their keys below). */
  lapsed: number;
  /** Archives without a verified seal to keep (archived under the policy `off`, or before evidence was recorded). */
  skipped: number;
  /** The first lapsed archives' keys, for the operator (at most 100). */
  lapsedKeys: string[];
  /** Archives due whose renewal did not verify (an authority whose certificate ends no later, say): kept as they were. */
  refused: number;
  /** The first refused archives' keys (at most 100). */
  refusedKeys: string[];
}

export type EvidenceUpkeepResult = EvidenceUpkeepTotals;

/** The workflow's signature, for clients that start it (the Schedule's action) without importing workflow code. */
export type EvidenceUpkeepWorkflow = (input?: EvidenceUpkeepInput) => Promise<EvidenceUpkeepResult>;

export interface ArchivePage {
  keys: string[];
  /** The key to resume after, or null at the end of the archive. */
  next: string | null;
}

export interface RenewArchiveInput {
  key: string;
  /** The upkeep's clock (workflow time), ISO 8601: evidence is judged no earlier than this. */
  asOf: string;
}

export interface ArchiveUpkeepOutcome {
  key: string;
  status: 'current' | 'renewed' | 'lapsed' | 'refused' | 'skipped';
  /** The renewal recorded in the manifest (status renewed). */
  renewalId?: number;
  documents: {
    entry: string;
    status: 'current' | 'renewed' | 'lapsed' | 'refused';
    evidenceExpiresAt: string | null;
    problems?: string[];
  }[];
}
