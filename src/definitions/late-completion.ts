/**
 * The late-completion workflow's public names: its type, id, input, result
 * and messages. Started by the inbox (activities/inbox.ts) and, in a rare
 * race, by the transaction workflow itself.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { EsignOutcome, EsignTransactionResult } from './transaction.js';

/**
 * A transaction that completes at the provider after its workflow ended (a
 * withdraw that lost a race, a provider that re-sent it) is archived by a
 * workflow of its own, one per provider transaction, started by the inbox.
 */
export const LATE_COMPLETION_WORKFLOW_TYPE = 'esignLateCompletion';

export function lateCompletionIdFor(transactionId: string): string {
  return `esign-late-${transactionId}`;
}

export interface LateCompletionInput {
  transactionId: string;
  /** The ended workflow's archive prefix and callback: what it told its inbox, or what its input said. */
  archivePrefix?: string;
  callbackUrl?: string;
  /**
   * How the original workflow ended (null: no workflow waited for the
   * transaction: none owned it, or its owner failed or was terminated).
   */
  ownerOutcome: EsignOutcome | null;
  /**
   * SHA-256 of each document the ended workflow uploaded, by StoragePath: the
   * archive checks the provider signed exactly these. Absent when the owner
   * did not hand them over (older workflows, or none owned the transaction).
   */
  originals?: Record<string, string>;
}

export interface LateCompletionResult {
  status: 'archived' | 'not_completed';
  transactionId: string;
  /** The provider's status when it was not completed after all. */
  providerStatus: string;
  report: EsignTransactionResult | null;
}

/**
 * Where a late completion is, also its `EsignStatus` search attribute. `archive_invalid`, as for a transaction: the
 * provider's record could not be read or its ZIP was refused (`archiveProblem` says why); nothing is archived, and
 * the workflow waits for an operator's `retryArchive` once the cause is fixed.
 */
export type LateCompletionPhase = 'late_archiving' | 'archive_invalid' | 'completed_late' | 'late_not_completed';

export interface LateCompletionStatus {
  phase: LateCompletionPhase;
  transactionId: string;
  /** From the provider's record: null until it is read. */
  referenceId: string | null;
  esignId: string | null;
  /** Why nothing could be archived (the failure type and reason), while the phase is `archive_invalid`. */
  archiveProblem?: string;
  /** Attempts refused so far (each told to the integrator as `transaction.archive_invalid`). */
  refusals: number;
  result: LateCompletionResult | null;
}

export const lateCompletionStatusQuery = defineQuery<LateCompletionStatus>('status');

/**
 * In phase `archive_invalid`, reads the provider's record (if it was not read yet) and downloads, verifies and
 * archives the ZIP again, once an operator has fixed the cause (a trust anchor, the provider's credentials). Returns
 * the late archive's report (`status: 'completed'`) when it is archived; fails with the reason (`ArchiveInvalid`,
 * `ProviderRejected`, …) when it is refused again (the workflow keeps waiting), and with `TransactionFinished` when
 * the provider's record says there is nothing to archive (the workflow ends `not_completed`). `esign retry-archive`
 * finds a late completion by its transactionId or referenceId (`retryEsignArchive`).
 */
export const lateRetryArchiveUpdate = defineUpdate<EsignTransactionResult, []>('retryArchive');

/** The workflow's signature, for clients that start it by its type name. */
export type EsignLateCompletionWorkflow = (input: LateCompletionInput) => Promise<LateCompletionResult>;
