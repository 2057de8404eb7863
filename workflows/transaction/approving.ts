/**
 * Approvals before sending: a transaction that names approvers is created as a
 * draft and waits in `awaiting_approval` until its quorum approves (the loop
 * then sends it), one approver rejects (it ends `rejected`), or the approval
 * deadline passes (it ends `expired`). The `approve` and `reject` handlers only
 * record an answer; the loop acts on it (`act`), so nothing is sent from a
 * handler and a cancel taken first always wins. Approvers hear of it through
 * the integrator's events (`approval.requested`, again as reminders).
 * docs/decisions/approvals-before-sending.md says why.
 */
import { ActivityFailure, ApplicationFailure, condition, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import type { ApprovalAnswer, ApprovalRecord, ApprovalRequest, ApprovalStatus, RejectionRequest } from '../../src/definitions/approvals.js';
import type { EsignTransactionResult } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';
import { durationToMs } from '../../src/util/duration.js';
import type { Clock } from '../clock.js';
import { buildUpdateRequest } from '../requests.js';
import type { Endings } from './endings.js';
import type { Integrator } from './integrator.js';
import type { ApprovalState } from './continued.js';
import { approvedCount, quorumOf, refuseApproval, textOf, type Decision } from './approval-rules.js';
import type { SigningTransaction } from './machine.js';
import { keepLandsUntil, landsUntilOf, providerRefusal, type Steps } from './steps.js';

export class Approvals {
  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
    private readonly integrator: Integrator,
    private readonly clock: Clock,
  ) {}

  /** Created as a draft: approvers are asked, and their deadline counts from the start (as the signing one does). */
  begin(): void {
    const { tx } = this;
    const plan = tx.input!.approval!;
    tx.approval = {
      deadlineAt: workflowInfo().startTime.getTime() + durationToMs(plan.deadline),
      answers: [],
      reminders: { sent: 0, nextAt: plan.reminders ? this.clock.now() + durationToMs(plan.reminders.firstAfter) : null },
    };
    tx.moveTo('awaiting_approval');
    this.#ask();
  }

  /** The `approve` and `reject` updates' work: the answer recorded (the validator checked it may be); the loop acts. */
  async answer(request: ApprovalRequest | RejectionRequest, decision: Decision): Promise<ApprovalAnswer> {
    const { tx } = this;
    // Sent with the start, or just after it: answered once the draft exists (a failed creation ends the run).
    await condition(() => tx.phase !== 'uploading' && tx.phase !== 'creating');
    const why = refuseApproval(tx, request, decision, this.clock.now());
    if (why) throw ApplicationFailure.nonRetryable(why, tx.isFinishing() ? FailureType.TransactionFinished : FailureType.ApprovalRefused);
    const state = tx.approval!;
    const approver = tx.input!.approval!.approvers.find((a) => a.id === request.approverId)!;
    const text = textOf(request, decision);
    const record: ApprovalRecord = {
      approverId: approver.id,
      ...(approver.name ? { name: approver.name } : {}),
      decision,
      ...(text ? { comment: text } : {}),
      at: this.clock.iso(),
    };
    state.answers.push(record);
    tx.activity++;
    tx.rescheduled = true; // the loop's wait ends: it acts on the answer
    const approvals = approvedCount(state);
    const quorum = quorumOf(tx);
    const type = decision === 'approved' ? 'approval.given' : 'approval.rejected';
    this.integrator.notify({
      type,
      key: `${tx.created!.transactionId}:${type}:${approver.id}`,
      occurredAt: record.at,
      data: { ...this.integrator.refs(), approval: record, approvals, quorum },
    });
    const outcome = decision === 'rejected' ? 'rejected' : approvals >= quorum ? 'sending' : 'pending';
    return { ...record, transactionId: tx.created!.transactionId, approvals, quorum, outcome };
  }

  /** Something for the loop to do while awaiting approval: an answer to act on, a deadline, a reminder. */
  due(): boolean {
    const state = this.tx.approval!;
    const now = this.clock.now();
    const deadline = Math.min(state.deadlineAt, this.tx.deadlineAt);
    return this.#decided(state) || now >= deadline || (state.reminders.nextAt !== null && now >= state.reminders.nextAt);
  }

  /** Approved by its quorum or rejected, and not yet acted on: the loop must come to it before it hands over. */
  decided(): boolean {
    return this.tx.phase === 'awaiting_approval' && !!this.tx.approval && this.#decided(this.tx.approval);
  }

  /** How long the loop may wait before `due` can change on its own (an answer wakes it: `rescheduled`). */
  waitMs(now: number): number {
    const state = this.tx.approval;
    if (this.tx.phase !== 'awaiting_approval' || !state) return Infinity;
    return Math.max(0, Math.min(state.deadlineAt, state.reminders.nextAt ?? Infinity) - now);
  }

  /** Acts on what is due: a rejection ends it, the quorum sends it, the deadline ends it, a reminder asks again. */
  async act(endings: Endings): Promise<EsignTransactionResult | undefined> {
    const { tx } = this;
    const state = tx.approval!;
    // Answers given before the deadline count, whenever the loop comes to them: the validators refused any later.
    const rejection = state.answers.find((x) => x.decision === 'rejected');
    if (rejection)
      return endings.ended('rejected', rejection.comment ?? 'rejected by an approver', 'approver', {
        rejectedBy: { approverId: rejection.approverId, ...(rejection.name ? { name: rejection.name } : {}) },
      });
    // Never sent, so never signable: a draft past a deadline ends without a withdraw. The loop comes here before it
    // checks the signing deadline, so an unapproved draft is never withdrawn into `overdue`, where it could be signed.
    const now = this.clock.now();
    const approved = approvedCount(state) >= quorumOf(tx);
    if (now >= tx.deadlineAt && approved)
      return endings.ended('expired', 'signing deadline passed before the approved transaction was sent', 'deadline');
    if (approved) return this.#send();
    if (now >= state.deadlineAt || now >= tx.deadlineAt)
      return endings.ended('expired', `approval deadline passed with ${approvedCount(state)} of ${quorumOf(tx)} approvals`, 'deadline');
    const plan = tx.input!.approval!.reminders!;
    const sent = ++state.reminders.sent;
    const next = this.clock.now() + durationToMs(plan.every);
    state.reminders.nextAt = sent < plan.maxCount && next < state.deadlineAt ? next : null;
    this.#ask(sent);
    return undefined;
  }

  /** Where the approval stands, for the status query. */
  status(): ApprovalStatus | undefined {
    const { tx } = this;
    const state = tx.approval;
    if (!state || !tx.input?.approval) return undefined;
    const rejected = state.answers.some((x) => x.decision === 'rejected');
    const approved = approvedCount(state) >= quorumOf(tx);
    return {
      state: rejected
        ? 'rejected'
        : approved
          ? 'approved'
          : tx.phase === 'awaiting_approval'
            ? 'pending'
            : tx.phase === 'expired'
              ? 'expired'
              : 'ended',
      quorum: quorumOf(tx),
      deadline: new Date(state.deadlineAt).toISOString(),
      approvers: tx.input.approval.approvers.map((a) => {
        const given = state.answers.find((x) => x.approverId === a.id);
        return { id: a.id, ...(a.name ? { name: a.name } : {}), ...(given ? { decision: given.decision, at: given.at } : {}) };
      }),
    };
  }

  #decided(state: ApprovalState): boolean {
    return state.answers.some((x) => x.decision === 'rejected') || approvedCount(state) >= quorumOf(this.tx);
  }

  /** The quorum approved: the draft goes to its signers, in line with the other provider writes. */
  async #send(): Promise<undefined> {
    const { tx } = this;
    try {
      await this.steps.write('Send the approved transaction to its signers', async (a) => {
        // A cancel accepted before its turn wins: the transaction is withdrawn, never sent.
        if (tx.cancel) return;
        const request = buildUpdateRequest(tx.request!, tx.input!.referenceId, { status: 'esign_pending' });
        const ref = await a.updateTransaction({ transactionId: tx.created!.transactionId, request });
        keepLandsUntil(tx, ref.landsUntil);
        tx.request = { ...tx.request!, ...request };
        tx.providerStatus = ref.status;
        tx.moveTo('awaiting_signatures');
        // Signers' reminders count from when they were asked to sign.
        this.integrator.planFirstReminder();
      });
    } catch (err) {
      keepLandsUntil(tx, landsUntilOf(err));
      // Retried while the provider is unavailable; this is its final answer (a 4xx, a broken contract).
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      // Approved, but not sent: it waits as a draft for replaceTransaction (esign_pending) or a cancel.
      log.error('the provider refused to send the approved transaction; it waits as a draft', {
        status: providerRefusal(err)?.status ?? null,
        error: err.cause?.message ?? err.message,
      });
      tx.moveTo('draft');
    }
    return undefined;
  }

  /** Tells the integrator whose answer is awaited (`reminder`: 0 the first time, then each reminder's number). */
  #ask(reminder = 0): void {
    const { tx } = this;
    const state = tx.approval!;
    this.integrator.notify({
      type: 'approval.requested',
      key: `${tx.created!.transactionId}:approval.requested:${reminder}`,
      data: {
        ...this.integrator.refs(),
        waitingFor: tx.input!.approval!.approvers.filter((a) => !state.answers.some((x) => x.approverId === a.id)),
        approvals: approvedCount(state),
        quorum: quorumOf(tx),
        deadline: new Date(state.deadlineAt).toISOString(),
        reminder,
      },
    });
  }
}
