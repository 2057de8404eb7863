/**
 * Approvals before sending (the `approve` and `reject` updates), zod-free: the
 * workflow, clients and the CLI import these names (the input's schema is in
 * src/transaction/input.ts, the updates' in src/transaction/approvals.ts).
 * docs/decisions/approvals-before-sending.md says why it works as it does.
 */

/** Someone whose approval the transaction needs before it is sent: an id of the integrator's, never an e-mail address. */
export interface Approver {
  id: string;
  /** For people reading events and the audit; never sent to the provider. */
  name?: string | undefined;
}

/** `approve`: an approver's yes, with an optional comment. */
export interface ApprovalRequest {
  approverId: string;
  comment?: string | undefined;
}

/** `reject`: an approver's no, with its reason (required: the integrator and the audit say why it ended). */
export interface RejectionRequest {
  approverId: string;
  reason: string;
}

/** One approver's answer, as the update answers it, the events say it and the archive's manifest keeps it. */
export interface ApprovalRecord {
  approverId: string;
  name?: string;
  decision: 'approved' | 'rejected';
  /** The approver's comment, or a rejection's reason. */
  comment?: string;
  at: string;
}

/** What an `approve` or `reject` update answers. */
export interface ApprovalAnswer extends ApprovalRecord {
  transactionId: string;
  /** Approvals so far, and how many send it. */
  approvals: number;
  quorum: number;
  /** `sending`: this approval met the quorum, the transaction goes to its signers now; `rejected`: it ends. */
  outcome: 'pending' | 'sending' | 'rejected';
}

/**
 * Where the approval stands, in the status query: `pending` while it awaits answers, `expired` at a deadline, `ended`
 * when the transaction ended otherwise before its approvers decided (a cancel, the provider deleting it).
 */
export interface ApprovalStatus {
  state: 'pending' | 'approved' | 'rejected' | 'expired' | 'ended';
  quorum: number;
  deadline: string;
  approvers: { id: string; name?: string; decision?: 'approved' | 'rejected'; at?: string }[];
}

export const MAX_APPROVERS = 20;
export const MAX_APPROVAL_COMMENT = 1000;
/** An approver's id: letters, digits and `. _ : -` (no `@`: an id, never an e-mail address). */
export const APPROVER_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
