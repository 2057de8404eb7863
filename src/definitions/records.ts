/**
 * Records kept as long as the law says and no longer (docs/records.md): each archive's retention, legal holds that
 * keep it past that, and the purge that destroys it then, leaving a tombstone. The names shared by the workflows,
 * their activities, the worker, clients and the CLI; no Node APIs, no zod.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

/** How long an archive is kept, as its manifest records it. */
export interface Retention {
  /** The period as given (`10 years`, or milliseconds). */
  period: string;
  /** When it ends: the archive may be purged from then on (ISO 8601). */
  until: string;
  /** Whose period: the transaction's input (or its template), or the worker's default (`ESIGN_ARCHIVE_RETENTION`). */
  source: 'transaction' | 'worker';
}

/** What a hold keeps: one provider transaction's archive, every archive of a referenceId, or of a bulk send. */
export type HoldScope = 'transaction' | 'reference' | 'batch';
export const HOLD_SCOPES: readonly HoldScope[] = ['transaction', 'reference', 'batch'];

export interface HoldRequest {
  scope: HoldScope;
  /** The transactionId, the referenceId or the batchId. */
  target: string;
  reason: string;
  /** Who asks (an operator's login, a matter number's owner): recorded, as the holds' history is the audit. */
  by: string;
}

export interface ReleaseRequest {
  holdId: string;
  reason: string;
  by: string;
}

/** What a hold covers, without who asked or why: what the archive's objects are matched against. */
export type HoldTarget = Pick<HoldRequest, 'scope' | 'target'>;

export interface LegalHold extends HoldRequest {
  id: string;
  placedAt: string;
  released?: { at: string; by: string; reason: string };
}

export const LEGAL_HOLDS_WORKFLOW_TYPE = 'legalHolds';
/** The namespace's one register of holds. */
export const LEGAL_HOLDS_WORKFLOW_ID = 'esign-legal-holds';
/** Places a hold (validated: scope, target, a reason, who asks); answers it with its id. */
export const placeHoldUpdate = defineUpdate<LegalHold, [HoldRequest]>('placeHold');
/** Releases a hold that stands, saying who and why; the release is kept with the hold. */
export const releaseHoldUpdate = defineUpdate<LegalHold, [ReleaseRequest]>('releaseHold');
/** Every hold, standing and released, oldest first. */
export const holdsQuery = defineQuery<LegalHold[]>('holds');
/** What the holds register carries from one run to the next. */
export interface LegalHoldsState {
  holds: LegalHold[];
  /**
   * What holds changed on that the archive store has yet to follow (`applyLegalHolds`). Absent when the store never
   * followed the run handing over: then every standing hold's archives are gone over.
   */
  unapplied?: HoldTarget[];
}
/** The holds register's signature, for clients that start it (update-with-start) without importing workflow code. */
export type LegalHoldsWorkflow = (state?: LegalHoldsState) => Promise<void>;

/**
 * Holds changed on `scopes`: the object legal hold (S3 Object Lock) of each archive they cover is set where one of
 * `holds` covers it and cleared where none does. Archives elsewhere are not touched.
 */
export interface LegalHoldsChange {
  /** Every hold in force now. */
  holds: HoldTarget[];
  /** What the holds that changed cover. */
  scopes: HoldTarget[];
}

export interface LegalHoldsApplied {
  /** Archives found in the scopes (tombstones aside). */
  archives: number;
  /** Of those, the archives whose objects are now held, and those whose objects are not. */
  held: number;
  released: number;
  /** Why no archive was looked at: the store does not hold objects itself (local, or S3 without Object Lock). */
  skipped?: string;
}

export const RECORDS_RETENTION_WORKFLOW_TYPE = 'recordsRetention';
export const RECORDS_RETENTION_SCHEDULE_ID = 'esign-records-retention';
export const RECORDS_RETENTION_WORKFLOW_ID = 'esign-records-retention';

export interface RetentionRunInput {
  /** Resume after this archive key (a continued run). */
  after?: string;
  totals?: RetentionTotals;
}

export interface RetentionTotals {
  /** Archives looked at. */
  checked: number;
  /** Purged in this run: a tombstone now stands for each. */
  purged: number;
  /** Past their retention, kept by a hold. */
  held: number;
  /** The first purged and held archives' keys (at most 100 each). */
  purgedKeys: string[];
  heldKeys: string[];
}
export type RecordsRetentionWorkflow = (input?: RetentionRunInput) => Promise<RetentionTotals>;

export interface PurgeInput {
  key: string;
  /** The purge's clock (workflow time), ISO 8601: an archive is due when its retention ended by then. */
  asOf: string;
}

export interface PurgeOutcome {
  key: string;
  status: 'purged' | 'held' | 'kept' | 'tombstone';
  /** Why it was kept (`kept`: not yet due, no retention recorded) or which holds keep it (`held`). */
  detail?: string;
}

/** What a tombstone keeps of a purged archive (in place of its manifest's personal fields): proof of what existed. */
export interface Purged {
  at: string;
  /** The retention run that purged it (its workflow run id): a retry of that run's purge counts it as the run's own. */
  walk?: string;
  /** The retention that applied. */
  retention: Retention;
  /**
   * What was destroyed, by hash: the ZIP, each of its entries, each renewal's file. Without names: an entry's name
   * may be a person's.
   */
  destroyed: { what: 'zip' | 'entry' | 'renewal'; bytes: number; sha256: string }[];
}
