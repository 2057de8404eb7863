/**
 * The protocol of the webhook inbox workflow (workflows/inbox.ts): its type,
 * ids, input and result, and the signal and query the bridge and operators use.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EsignWebhook } from '../esign/schemas.js';
import type { EsignOutcome } from './transaction.js';

/**
 * Webhooks name provider ids, workflows are keyed by referenceId. The bridge
 * routes a webhook to the transaction's workflow by the provider's record; a
 * completion no running workflow owns goes, by signal-with-start, to a small
 * inbox workflow per provider transaction, which finds its owner and archives
 * it late.
 */
export const INBOX_WORKFLOW_TYPE = 'esignInbox';

export function inboxIdFor(transactionId: string): string {
  return `esign-inbox-${transactionId}`;
}

export interface InboxInput {
  transactionId: string;
  /** How long a notification waits for its owner to be found ended before it is closed as orphaned. */
  orphanAfter?: string;
  /** How long the inbox stays to acknowledge late redeliveries once its owner was found ended. */
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
  /** Notifications that found no owner (when orphaned). */
  orphaned: EsignWebhook[];
  /** The late-completion workflow started for a completion nobody waited for, if any. */
  lateCompletion?: string;
}

/** The workflow's signature, for clients that start it by its type name (the bridge). */
export type EsignInboxWorkflow = (input: InboxInput) => Promise<InboxResult>;

export const inboxNotificationSignal = defineSignal<[EsignWebhook]>('inboxNotification');
/** The owner found (its workflow id), notifications waiting for it, and whether it was found ended. */
export const inboxStatusQuery = defineQuery<{ owner: string | null; pending: number; ownerFinished: boolean }>('inboxStatus');

/**
 * Who owns a transaction whose completion reached its inbox
 * (`findTransactionOwner`): the workflow `esign-<referenceId>`
 * named by the provider's record; when that record cannot be read, the run that
 * names the transaction (`EsignTransactionId`), or the workflow of the
 * referenceId the bridge routed the completion by.
 */
export type TransactionOwner =
  /** It runs: it follows the transaction to its end by itself (the bridge signals it directly). */
  | { owner: 'running'; ownerWorkflowId: string }
  /**
   * It has ended, or there is none (`ownerWorkflowId` null): nobody will take
   * the completion, so a late completion archives it, with what the owner
   * left behind (its outcome, null when it failed or there is none; its
   * archive prefix and callback from its input; its uploads' hashes, by
   * StoragePath, from its result: a late archive checks the provider signed these).
   */
  | {
      owner: 'ended';
      ownerWorkflowId: string | null;
      outcome: EsignOutcome | null;
      archivePrefix?: string;
      callbackUrl?: string;
      originals?: Record<string, string>;
    };
