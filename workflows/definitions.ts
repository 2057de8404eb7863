/**
 * Names other parts and operators rely on: the workflow type, task queue,
 * workflow ids, and the messages the workflow accepts. Imported by clients,
 * the webhook bridge and the CLI.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { EsignCompletedWebhook, IframeStyle, NotifyParticipants, RequestStatus } from '../src/esign/schemas.js';

export const WORKFLOW_TYPE = 'esignTransaction';
export const DEFAULT_TASK_QUEUE = 'esign-transactions';

export function workflowIdFor(referenceId: string): string {
  return `esign-${referenceId}`;
}

/** Phases, also the values of the `EsignStatus` search attribute. */
export type EsignPhase = 'uploading' | 'creating' | 'draft' | 'awaiting_signatures' | 'archiving' | 'completed' | 'expired' | 'cancelled';

export interface ArchiveResult {
  uri: string;
  sha256: string;
  bytes: number;
  files: { name: string; bytes: number; sha256: string }[];
}

export interface EsignTransactionResult {
  status: 'completed' | 'expired' | 'cancelled';
  referenceId: string;
  transactionId: string | null;
  esignId: string | null;
  archive?: ArchiveResult;
  reason?: string;
}

export interface EsignTransactionStatus {
  phase: EsignPhase;
  referenceId: string;
  transactionId: string | null;
  esignId: string | null;
  /** Participant ids and names: enough to ask for signing URLs. */
  participants: { id: string; name: string }[];
  providerStatus: string | null;
  /** Null only in the instant before the input is validated. */
  deadline: string | null;
  lastReconciledAt: string | null;
  notificationsAccepted: number;
  notificationsRejected: number;
  result: EsignTransactionResult | null;
}

/** The provider's `esign-completed` webhook payload (spec section 6), delivered by the bridge. */
export const esignCompletedSignal = defineSignal<[EsignCompletedWebhook]>('esignCompleted');

export const statusQuery = defineQuery<EsignTransactionStatus>('status');

export interface IssueSigningUrlRequest {
  participantIds: string[];
  style?: IframeStyle;
}
/** Returns a fresh signing URL from the provider each time (URLs expire). */
export const issueSigningUrlUpdate = defineUpdate<{ url: string }, [IssueSigningUrlRequest]>('issueSigningUrl');

export interface ReplaceTransactionRequest {
  status: RequestStatus;
  notifyParticipants?: NotifyParticipants;
  signingOrder?: boolean;
  personalizedMessage?: string;
  emailSubject?: string;
}
/** Maps to the spec's update operation (e.g. send a draft with `status: 'esign_pending'`). */
export const replaceTransactionUpdate = defineUpdate<{ status: string }, [ReplaceTransactionRequest]>('replaceTransaction');

export const cancelUpdate = defineUpdate<EsignTransactionResult, [{ reason?: string }]>('cancel');

// ------------------------------------------------------------- webhook inbox

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
