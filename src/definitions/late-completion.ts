/**
 * The late-completion workflow's public names: its type, id, input and
 * result. Started by the inbox (activities/inbox.ts) and, in a rare race, by
 * the transaction workflow itself.
 */
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

/** The workflow's signature, for clients that start it by its type name. */
export type EsignLateCompletionWorkflow = (input: LateCompletionInput) => Promise<LateCompletionResult>;
