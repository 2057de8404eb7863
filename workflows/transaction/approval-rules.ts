/**
 * What an approval may be: the `approve` and `reject` validators' reasons (`refuseApproval`), checked zod-free since
 * another SDK may send anything, and whether the transaction still awaits its approvers. Pure; ./approving.ts does
 * the work. docs/workflow.md, "Approvals", says what each refusal means to a caller.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import {
  APPROVER_ID,
  MAX_APPROVAL_COMMENT,
  type ApprovalRecord,
  type ApprovalRequest,
  type RejectionRequest,
} from '../../src/definitions/approvals.js';
import { FailureType } from '../../src/failures.js';
import { textProblem } from '../../src/util/text.js';
import type { ApprovalState } from './continued.js';
import type { SigningTransaction } from './machine.js';

export type Decision = ApprovalRecord['decision'];

export const approvedCount = (a: ApprovalState) => a.answers.filter((x) => x.decision === 'approved').length;
/** How many approvals send it: the quorum, or every approver when none is given. */
export const quorumOf = (tx: SigningTransaction) => tx.input!.approval!.quorum ?? tx.input!.approval!.approvers.length;

/**
 * Named approvers whose quorum has not approved it, whatever its phase: it must never be sent or signed. Known once
 * the draft exists (`begin`); a rejected or ended one is refused earlier, as finishing.
 */
export const awaitsApprovers = (tx: SigningTransaction): boolean => !!tx.approval && approvedCount(tx.approval) < quorumOf(tx);

/** The fields each answer takes: the approver, and the approval's comment or the rejection's reason. */
const FIELDS = { approved: ['approverId', 'comment'], rejected: ['approverId', 'reason'] } as const;

/** The answer's text (its comment, or its reason), as the validator let it through. */
export const textOf = (request: ApprovalRequest | RejectionRequest, decision: Decision): string | undefined =>
  (decision === 'approved' ? (request as ApprovalRequest).comment : (request as RejectionRequest).reason)?.trim() || undefined;

/** Why this answer's shape is refused, or undefined. Checked here, zod-free: another SDK may send anything. */
function refuseShape(raw: unknown, decision: Decision): string | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'an answer is an object naming its approverId';
  const r = raw as Partial<Record<string, unknown>>;
  if (typeof r.approverId !== 'string' || !APPROVER_ID.test(r.approverId))
    return 'approverId must name one of the approvers (an id, never an e-mail address)';
  // Another field with a value (a rejection's `reason` in an approve) is refused, never read or dropped without a
  // word; null is an SDK writing a field it leaves unset.
  const extra = Object.keys(r).find((k) => !(FIELDS[decision] as readonly string[]).includes(k) && r[k] !== null);
  if (extra !== undefined)
    return `${decision === 'approved' ? 'approve' : 'reject'} takes ${FIELDS[decision].join(' and ')}, not ${extra.slice(0, 40)}`;
  const name = FIELDS[decision][1];
  const text = r[name] ?? undefined;
  if (decision === 'rejected' && (typeof text !== 'string' || text.trim() === '')) return 'reason must say why it is rejected';
  if (text === undefined) return undefined;
  if (typeof text !== 'string' || text.length > MAX_APPROVAL_COMMENT) return `${name} must be at most ${MAX_APPROVAL_COMMENT} characters`;
  const unsafe = textProblem(text, 'many');
  return unsafe && `${name} ${unsafe}`;
}

/** Why the transaction cannot take this answer now, or undefined. */
export function refuseApproval(tx: SigningTransaction, raw: unknown, decision: Decision, now: number): string | undefined {
  const shape = refuseShape(raw, decision);
  if (shape) return shape;
  const { approverId } = raw as { approverId: string };
  if (tx.input && !tx.input.approval) return 'transaction names no approvers';
  if (tx.input && !tx.input.approval!.approvers.some((a) => a.id === approverId))
    return `${approverId} is not an approver of this transaction`;
  if (tx.cancel) return 'transaction is being cancelled';
  // Being created: the handler waits until it awaits approval, then asks again.
  if (tx.phase === 'uploading' || tx.phase === 'creating') return undefined;
  const state = tx.approval;
  if (tx.phase !== 'awaiting_approval' || !state) return `transaction is ${tx.phase}: it no longer awaits approval`;
  if (state.answers.some((x) => x.decision === 'rejected')) return 'an approver rejected it: it is ending';
  if (approvedCount(state) >= quorumOf(tx)) return 'its quorum approved it: it is being sent';
  if (now >= state.deadlineAt) return 'its approval deadline passed: it is ending expired';
  const before = state.answers.find((x) => x.approverId === approverId);
  if (before) return `approver ${before.approverId} already ${before.decision} it`;
  return undefined;
}

/** An update that would send, or sign, a transaction its approvers have not approved. */
export const awaitingApproval = () =>
  ApplicationFailure.nonRetryable('transaction awaits approval: it is sent once its approvers approve it', FailureType.AwaitingApproval);
