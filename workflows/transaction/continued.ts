/** The state one run of the transaction workflow hands to the next (continue-as-new); `SigningTransaction.carry()` builds it. */
import type { ParticipantState } from '../../activities/transactions.js';
import type { CreateTransactionRequest, Participant } from '../../src/esign/schemas.js';
import type { EsignPhase } from '../../src/definitions/transaction.js';
import type { CorrectionRecord } from '../../src/definitions/corrections.js';
import type { ApprovalRecord } from '../../src/definitions/approvals.js';

/** What a run hands to the next when it continues as new: everything the transaction must not forget. */
export interface ContinuedTransaction {
  participants: Participant[];
  request: CreateTransactionRequest;
  /** Absent in runs continued before the evidence checks. */
  originals?: Record<string, string>;
  created: { transactionId: string; esignId: string };
  phase: EsignPhase;
  deadlineAt: number;
  providerStatus: string | null;
  lastReconciledAt: string | null;
  accepted: number;
  rejected: number;
  /** The latest notification ids, so a redelivery across the hand-over has one effect. */
  seen: string[];
  progress: ParticipantState[] | null;
  /** Participants whose signature the integrator was told of. */
  announced: string[];
  reminders: { sent: number; nextAt: number | null };
  pollMs: number;
  runs: number;
  /** Why the completed ZIP was refused, when the run handed over in `archive_invalid`. */
  archiveProblem?: string;
  /** Refused archive attempts so far: each refusal's event has a key of its own. */
  archiveRefusals?: number;
  /** The last event's sequence number in the integrator's event log (its workflow exists when this is set). */
  eventsSent?: number;
  /** The corrections taken so far (their audit), when any. */
  corrections?: CorrectionRecord[];
  /** Its approval, when it names approvers (answers, deadline, reminders). */
  approval?: ApprovalState;
  /** Until when a replace given up on may still land (machine.ts `replaceLandsUntil`), while that is ahead. */
  replaceLandsUntil?: number;
}

/** What a run hands to the next of its approval (./approving.ts). */
export interface ApprovalState {
  deadlineAt: number;
  /** Every answer, in the order given. */
  answers: ApprovalRecord[];
  reminders: { sent: number; nextAt: number | null };
}
