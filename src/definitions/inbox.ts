/**
 * The protocol of the webhook inbox workflow (./inbox.ts): its type, ids,
 * input and result, and the signals and query the bridge, the transaction
 * workflow and operators use.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EsignWebhook } from '../esign/schemas.js';
import type { EsignOutcome } from './transaction.js';

/**
 * Webhooks name provider ids, workflows are keyed by referenceId. A small
 * inbox workflow per provider transaction joins the two: the bridge reaches
 * it by signal-with-start, the transaction workflow registers with it right
 * after creation, and whichever comes first starts it.
 */
export const INBOX_WORKFLOW_TYPE = 'esignInbox';

export function inboxIdFor(transactionId: string): string {
  return `esign-inbox-${transactionId}`;
}

export interface InboxInput {
  transactionId: string;
  /** How long a notification waits for its transaction workflow before it is closed as orphaned. */
  orphanAfter?: string;
  /** How long the inbox stays to acknowledge late redeliveries once its transaction finished. */
  retainAfterOwnerFinished?: string;
  /**
   * The referenceId the provider's record named when the bridge routed the completion that started the inbox (its
   * owner, `esign-<referenceId>`, had no running run): the inbox looks its owner up by it, besides the transaction id,
   * when its own read of the record fails.
   */
  referenceId?: string;
}

export interface InboxResult {
  status: 'closed' | 'orphaned';
  transactionId: string;
  owner: string | null;
  forwarded: number;
  /** Notifications that found no owner (when orphaned). */
  orphaned: EsignWebhook[];
  /** The late-completion workflow started for a completion nobody waited for, if any. */
  lateCompletion?: string;
}

/** The workflow's signature, for clients that start it by its type name (the bridge, the registration activity). */
export type EsignInboxWorkflow = (input: InboxInput) => Promise<InboxResult>;

export const inboxNotificationSignal = defineSignal<[EsignWebhook]>('inboxNotification');
export const inboxRegisterSignal = defineSignal<[{ ownerWorkflowId: string }]>('inboxRegister');
/** How the owner ended, and where a late completion should archive and report (absent in histories before late completion). */
export interface OwnerFinished {
  outcome: EsignOutcome;
  archivePrefix?: string;
  callbackUrl?: string;
  /** SHA-256 of each document the owner uploaded, by StoragePath: a late archive checks the provider signed these. */
  originals?: Record<string, string>;
}
export const inboxOwnerFinishedSignal = defineSignal<[OwnerFinished?]>('inboxOwnerFinished');
export const inboxStatusQuery = defineQuery<{ owner: string | null; pending: number; forwarded: number; ownerFinished: boolean }>(
  'inboxStatus',
);

/**
 * Who owns a transaction whose completion reached an inbox no workflow has
 * registered with (`findTransactionOwner`): the workflow `esign-<referenceId>`
 * named by the provider's record; when that record cannot be read, the run that
 * names the transaction (`EsignTransactionId`), or the workflow of the
 * referenceId the bridge routed the completion by.
 */
export type TransactionOwner =
  /** It runs: it registers with the inbox and follows the transaction to its end by itself. */
  | { owner: 'running'; ownerWorkflowId: string }
  /**
   * It has ended, or there is none (`ownerWorkflowId` null): nobody will take
   * the completion, so a late completion archives it, with what the owner
   * left behind (its outcome, null when it failed or there is none; its
   * archive prefix and callback from its input; its uploads' hashes from its result).
   */
  | {
      owner: 'ended';
      ownerWorkflowId: string | null;
      outcome: EsignOutcome | null;
      archivePrefix?: string;
      callbackUrl?: string;
      originals?: Record<string, string>;
    };
