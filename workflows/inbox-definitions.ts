/**
 * The protocol of the webhook inbox workflow (./inbox.ts): its type, ids,
 * input and result, and the signals and query the bridge, the transaction
 * workflow and operators use.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EsignCompletedWebhook } from '../src/esign/schemas.js';

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
}

export interface InboxResult {
  status: 'closed' | 'orphaned';
  transactionId: string;
  owner: string | null;
  forwarded: number;
  /** Notifications that found no owner (when orphaned). */
  orphaned: EsignCompletedWebhook[];
}

export const inboxNotificationSignal = defineSignal<[EsignCompletedWebhook]>('inboxNotification');
export const inboxRegisterSignal = defineSignal<[{ ownerWorkflowId: string }]>('inboxRegister');
export const inboxOwnerFinishedSignal = defineSignal('inboxOwnerFinished');
export const inboxStatusQuery = defineQuery<{ owner: string | null; pending: number; forwarded: number; ownerFinished: boolean }>(
  'inboxStatus',
);
