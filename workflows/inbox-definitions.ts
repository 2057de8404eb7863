/**
 * The protocol of the webhook inbox workflow (./inbox.ts): its type, ids,
 * input and result, and the signals and query the bridge, the transaction
 * workflow and operators use.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EsignWebhook } from '../src/esign/schemas.js';
import type { EsignOutcome } from './definitions.js';

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
  orphaned: EsignWebhook[];
  /** The late-completion workflow started for a completion nobody waited for, if any. */
  lateCompletion?: string;
}

export const inboxNotificationSignal = defineSignal<[EsignWebhook]>('inboxNotification');
export const inboxRegisterSignal = defineSignal<[{ ownerWorkflowId: string }]>('inboxRegister');
/** How the owner ended, and where a late completion should archive and report (absent in histories before late completion). */
export interface OwnerFinished {
  outcome: EsignOutcome;
  archivePrefix?: string;
  callbackUrl?: string;
}
export const inboxOwnerFinishedSignal = defineSignal<[OwnerFinished?]>('inboxOwnerFinished');
export const inboxStatusQuery = defineQuery<{ owner: string | null; pending: number; forwarded: number; ownerFinished: boolean }>(
  'inboxStatus',
);
