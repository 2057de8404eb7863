/**
 * The transaction workflow's public names: its type, task queue, workflow
 * ids, and the messages it accepts. Imported by clients, the webhook bridge,
 * the CLI and activities (the inbox's protocol is in ./inbox.ts, the late
 * completion's in ./late-completion.ts).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ParticipantStatus } from '../esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook, IframeStyle, NotifyParticipants, RequestStatus } from '../esign/schemas.js';
import type { ArchiveEvidence } from '../evidence/report.js';
import type { EsignTransactionInput } from '../transaction/input.js';
import type { ApprovalAnswer, ApprovalRequest, ApprovalStatus, RejectionRequest } from './approvals.js';
import type { CorrectionResult, TransactionCorrection } from './corrections.js';

export const WORKFLOW_TYPE = 'esignTransaction';
export const DEFAULT_TASK_QUEUE = 'esign-transactions';

export function workflowIdFor(referenceId: string): string {
  return `esign-${referenceId}`;
}

/** How a transaction ends (docs/workflow.md draws every way). */
export type EsignOutcome = 'completed' | 'declined' | 'rejected' | 'expired' | 'cancelled' | 'deleted';

/**
 * Phases, also the values of the `EsignStatus` search attribute. `overdue`:
 * the deadline passed but the provider refused to withdraw the transaction
 * (someone has signed), so it may still complete; the workflow waits for the
 * provider's end.
 */
export type EsignPhase =
  | 'uploading'
  | 'creating'
  | 'draft'
  /** A draft at the provider until its approvers' quorum approves (then sent), one rejects, or their deadline passes. */
  | 'awaiting_approval'
  | 'awaiting_signatures'
  | 'overdue'
  | 'archiving'
  /** The provider completed it, but its ZIP failed verification: nothing archived; waits for an operator's `retryArchive`. */
  | 'archive_invalid'
  | EsignOutcome;

export interface ArchiveResult {
  uri: string;
  sha256: string;
  bytes: number;
  files: { name: string; bytes: number; sha256: string }[];
  /** Each document's seal and hashes, and the certificate of completion, as verified before archiving (docs/evidence.md). */
  evidence?: ArchiveEvidence;
}

export interface EsignTransactionResult {
  status: EsignOutcome;
  referenceId: string;
  transactionId: string | null;
  esignId: string | null;
  archive?: ArchiveResult;
  reason?: string;
  /** Who declined, when the outcome is `declined` (the reason, in their words, is `reason`). */
  declinedBy?: { participantId: string; name: string };
  /** Who rejected it before it was sent, when the outcome is `rejected` (their reason is `reason`). */
  rejectedBy?: { approverId: string; name?: string };
  /** Who ended it: the caller (cancel), a deadline, a signer (decline), an approver (reject), or the provider itself. */
  endedBy?: 'request' | 'deadline' | 'signer' | 'approver' | 'provider';
  /** SHA-256 of each document we uploaded, by StoragePath: what the provider had to sign (a late archive checks it). */
  originals?: Record<string, string>;
}

/**
 * The transaction workflow as clients start and await it (`WorkflowHandle<EsignTransactionWorkflow>`): its type
 * without its code, so a client (the client package) never compiles the workflow. workflows/client-view.ts
 * checks that the workflow fits it.
 */
export type EsignTransactionWorkflow = (input: EsignTransactionInput) => Promise<EsignTransactionResult>;

/**
 * Why a transaction's workflow does not move on: it ended without a result (phase `failed`: failed, terminated by an
 * operator, timed out or cancelled), or it runs stuck (phase `stuck`: its workflow task fails on every attempt).
 */
export interface EsignRunFailure {
  /** How the run closed; null while it is stuck (still open: it moves again once a worker can run its task). */
  closedAs: 'failed' | 'terminated' | 'timed_out' | 'cancelled' | null;
  /**
   * The failure's type: a catalogued one (`src/failures.ts`, e.g. `UrlNotAllowed`) when the run failed with one;
   * for a stuck run, the worker's error (`CodecKeyUnknown`: its payloads name a key no worker holds).
   */
  type: string | null;
  message: string;
  /** Stuck: the attempt the workflow task is at (2 after its first failure). */
  attempts?: number;
  /** Stuck: when its task first failed in this streak (ISO 8601). */
  since?: string;
}

export interface EsignTransactionStatus {
  /**
   * `failed` when the workflow ended without a result (`failure` says how): it will not move again. `stuck` when
   * it runs but its workflow task fails on every attempt (`failure` says why; docs/codec.md): it moves again only
   * once a worker can run it (the missing codec key given back), or ends when an operator terminates it.
   */
  phase: EsignPhase | 'failed' | 'stuck';
  /** One line for people, as the Web UI shows it: "1 of 2 signed; waiting for Alan Turing". */
  summary: string;
  referenceId: string;
  transactionId: string | null;
  esignId: string | null;
  /** Participant ids and names: enough to ask for signing URLs; progress when the provider reports it. */
  participants: { id: string; name: string; status?: ParticipantStatus; at?: string }[];
  providerStatus: string | null;
  /** Null only in the instant before the input is validated. */
  deadline: string | null;
  lastReconciledAt: string | null;
  notificationsAccepted: number;
  notificationsRejected: number;
  result: EsignTransactionResult | null;
  /** Why and how the workflow ended without a result (phase `failed`), or why it does not move (phase `stuck`). */
  failure?: EsignRunFailure;
  /** Why the completed ZIP was refused, while the phase is `archive_invalid`. */
  archiveProblem?: string;
  /** Where its approval stands, when the transaction names approvers. */
  approval?: ApprovalStatus;
  /**
   * Set when an ended transaction's status was read from its result because no worker answered the query
   * (one of the Worker Deployment version it ended on: retired). Participants and counts are then unknown.
   */
  fromResult?: true;
}

/** The provider's `esign-completed` webhook payload (spec section 6), delivered by the bridge. */
export const esignCompletedSignal = defineSignal<[EsignCompletedWebhook]>('esignCompleted');

/** Any other provider event in the same envelope (`esign-declined`, `esign-participant-signed`, …), delivered by the bridge. */
export const esignEventSignal = defineSignal<[EsignWebhook]>('esignEvent');

export const statusQuery = defineQuery<EsignTransactionStatus>('status');

export interface IssueSigningUrlRequest {
  participantIds: string[];
  style?: IframeStyle;
}
/** The URL, and the provider's transaction it belongs to (absent from workers before it was added). */
export interface IssuedSigningUrl {
  url: string;
  transactionId?: string;
}
/** Returns a fresh signing URL from the provider each time (URLs expire). */
export const issueSigningUrlUpdate = defineUpdate<IssuedSigningUrl, [IssueSigningUrlRequest]>('issueSigningUrl');

export interface ReplaceTransactionRequest {
  status: RequestStatus;
  notifyParticipants?: NotifyParticipants;
  signingOrder?: boolean;
  personalizedMessage?: string;
  emailSubject?: string;
}
/** Maps to the spec's update operation (e.g. send a draft with `status: 'esign_pending'`). */
export const replaceTransactionUpdate = defineUpdate<{ status: string }, [ReplaceTransactionRequest]>('replaceTransaction');

/**
 * Corrects the transaction in flight (src/definitions/corrections.ts: reassign, contact, addSigner, removeSigner,
 * deadline, resend), at the provider as an update (4.4) that keeps what was signed. Refused by its validator with the
 * reason (a signer who signed, an unknown participant, a deadline in the past, a transaction ended or being
 * cancelled); fails with `CorrectionRefused` or `ProviderRejected` when the state changed before its turn or the
 * provider refuses it, the workflow's view unchanged. Recorded in the integrator's `transaction.corrected` event.
 */
export const correctTransactionUpdate = defineUpdate<CorrectionResult, [TransactionCorrection]>('correctTransaction');

/**
 * An approver approves the transaction (phase `awaiting_approval`); the approval that meets the quorum sends it (the
 * answer's `outcome` is `sending`). Refused by its validator with the reason: an approver not named, one who already
 * answered, a transaction not awaiting approval (sent, ended, being cancelled) or past its approval deadline.
 */
export const approveUpdate = defineUpdate<ApprovalAnswer, [ApprovalRequest]>('approve');

/** An approver rejects the transaction before it is sent: it ends `rejected`, with the reason. Refused as `approve` is. */
export const rejectUpdate = defineUpdate<ApprovalAnswer, [RejectionRequest]>('reject');

/**
 * Withdraws the transaction at the provider, then ends the workflow as
 * `cancelled`. Fails with `WithdrawRefused` (the workflow goes on) when the
 * provider refuses because a participant has signed, and with
 * `TransactionFinished` when it has completed or ended meanwhile.
 */
export const cancelUpdate = defineUpdate<EsignTransactionResult, [{ reason?: string }]>('cancel');

/**
 * In phase `archive_invalid` (the provider completed the transaction but its
 * ZIP failed verification), downloads, verifies and archives it again, once
 * an operator has fixed the cause (a trust anchor, say). Returns the result
 * when it is archived; fails with `ArchiveInvalid` and the reason when it is
 * refused again (the workflow keeps waiting).
 */
export const retryArchiveUpdate = defineUpdate<EsignTransactionResult, []>('retryArchive');

// ------------------------------------------------------- integrator events

/** What the integrator's backend receives at `callbackUrl` (docs/integrator-events.md). */
export type IntegratorEventType =
  | 'approval.requested'
  | 'approval.given'
  | 'approval.rejected'
  | 'participant.signed'
  | 'reminder.due'
  | 'transaction.corrected'
  | 'transaction.completed'
  | 'transaction.completed_late'
  | 'transaction.archive_invalid'
  | 'transaction.declined'
  | 'transaction.rejected'
  | 'transaction.cancelled'
  | 'transaction.expired'
  | 'transaction.deleted';

export interface IntegratorEvent {
  type: IntegratorEventType;
  /** Unique per event of a transaction; its hash is the `webhook-id` receivers deduplicate by. */
  key: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** An event's body as POSTed to `callbackUrl` (signed per Standard Webhooks: src/client/events.ts verifies it). */
export interface IntegratorEventBody {
  type: IntegratorEventType;
  /** The event's number in its transaction's log, from 1 with no gap: a receiver can order events and see one it missed. */
  sequence: number;
  /** When it happened (ISO 8601). */
  timestamp: string;
  data: Record<string, unknown>;
}
