/**
 * The transaction workflow's public names: its type, task queue, workflow
 * ids, and the messages it accepts. Imported by clients, the webhook bridge
 * and the CLI. (The inbox's protocol is in ./inbox-definitions.ts.)
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
