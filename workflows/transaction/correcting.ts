/**
 * The `correctTransaction` update's work: a correction goes to the provider as
 * the spec's update (4.4), in line with the other provider writes, and changes
 * the workflow's view only once the provider took it; a deadline is the
 * workflow's own, and a resend is a fresh signing URL. Each is recorded for
 * the audit and told to the integrator (`transaction.corrected`).
 */
import { ApplicationFailure, isCancellation, uuid4 } from '@temporalio/workflow';
import type { CorrectionRecord, CorrectionResult, TransactionCorrection } from '../../src/definitions/corrections.js';
import type { Participant } from '../../src/esign/schemas.js';
import { FailureType } from '../../src/failures.js';
import { durationToMs } from '../../src/util/duration.js';
import type { Clock } from '../clock.js';
import { Progress } from '../progress.js';
import { buildUpdateRequest } from '../requests.js';
import { corrected, refuseCorrection } from './corrections.js';
import type { Integrator } from './integrator.js';
import type { SigningTransaction } from './machine.js';
import { keepLandsUntil, landsUntilOf, providerFailure, type Steps } from './steps.js';

/** The update's work. */
export class Corrections {
  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
    private readonly integrator: Integrator,
    private readonly clock: Clock,
  ) {}

  async correct(c: TransactionCorrection): Promise<CorrectionResult> {
    const { tx } = this;
    tx.activity++;
    const asked = { kind: c.kind, by: c.by.trim(), ...(c.reason ? { reason: c.reason } : {}) };
    if (c.kind === 'deadline') return this.#done({ ...asked, deadline: this.#moveDeadline(Date.parse(c.deadline)) });
    if (c.kind === 'resend') return this.#resend(c.participantId, asked);
    return this.steps.write(`Correct the transaction (${c.kind})`, async (a) => {
      // Its turn came after other writes: what was true when it was accepted may not be any more.
      this.#refuseNow(c);
      const given =
        c.kind === 'reassign' ? c.to.id : c.kind === 'contact' ? c.newId : c.kind === 'addSigner' ? c.participant.id : undefined;
      const next = corrected(tx.request!, c, given ?? uuid4());
      const status = tx.phase === 'draft' ? 'draft' : 'esign_pending';
      const update = buildUpdateRequest(next.request, tx.input!.referenceId, { status });
      try {
        const ref = await a.updateTransaction({ transactionId: tx.created!.transactionId, request: update });
        keepLandsUntil(tx, ref.landsUntil);
        tx.providerStatus = ref.status;
      } catch (err) {
        // Given up on (or refused after a retry): the attempt may still land, so a withdraw waits past it.
        keepLandsUntil(tx, landsUntilOf(err));
        if (isCancellation(err)) throw err;
        throw providerFailure(err, 'the provider did not take the correction');
      }
      // The view changes only now that the provider took it.
      tx.request = next.request;
      tx.participants = next.request.participants;
      const states = tx.progress?.states?.filter((s) => tx.participants.some((p) => p.id === s.id)) ?? null;
      tx.progress = new Progress(tx.participants, states, [...(tx.progress?.announced ?? [])]);
      this.integrator.participantsChanged();
      return this.#done({
        ...asked,
        ...(next.removed ? { removed: { id: next.removed.id, name: nameOf(next.removed) } } : {}),
        ...(next.added ? { added: { id: next.added.id, name: nameOf(next.added) } } : {}),
      });
    });
  }

  /** The deadline moved; reminders end before it, and resume when it moved out past their next one. */
  #moveDeadline(at: number): { from: string; to: string } {
    const { tx } = this;
    const from = this.clock.iso(tx.deadlineAt);
    tx.deadlineAt = at;
    const plan = tx.input!.reminders;
    let next = tx.reminders.nextAt;
    // Reminders the old deadline stopped resume when it moved out (while some are left to send).
    if (next === null && plan && tx.input!.callbackUrl && tx.phase === 'awaiting_signatures' && tx.reminders.sent < plan.maxCount)
      next = this.clock.now() + durationToMs(plan.every);
    tx.reminders = { ...tx.reminders, nextAt: next !== null && next < at ? next : null };
    // The loop's wait was planned with the old deadline: it plans again.
    tx.rescheduled = true;
    return { from, to: this.clock.iso(at) };
  }

  /** A fresh signing URL for one participant now, and their reminders counted again from the first. */
  async #resend(participantId: string, asked: Pick<CorrectionRecord, 'kind' | 'by' | 'reason'>): Promise<CorrectionResult> {
    const { tx } = this;
    const { esignId } = tx.created!;
    const style = tx.input!.iframeStyle;
    let url: string;
    try {
      ({ url } = await this.steps.attempt('Issue a signing URL to resend the invitation', (a) => {
        // Its turn came after other local work: a cancel may have started, or a replace made it a draft.
        this.#refuseNow({ ...asked, kind: 'resend', participantId });
        return a.createSigningUrl({ esignId, participantIds: [participantId], ...(style ? { style } : {}) });
      }));
    } catch (err) {
      if (isCancellation(err) || err instanceof ApplicationFailure) throw err;
      throw providerFailure(err, 'the provider did not issue a signing URL');
    }
    this.integrator.restartReminders();
    // The loop's wait was planned without this reminder.
    tx.rescheduled = true;
    return { ...(await this.#done({ ...asked, resentTo: { id: participantId, name: tx.nameOf(participantId) } })), url };
  }

  /** Refuses, at its turn, a correction the state no longer allows (typed: finishing, or refused for the reason). */
  #refuseNow(c: TransactionCorrection): void {
    const why = refuseCorrection(this.tx, c, this.clock.now());
    if (why)
      throw ApplicationFailure.nonRetryable(why, this.tx.isFinishing() ? FailureType.TransactionFinished : FailureType.CorrectionRefused);
  }

  /** Recorded for the audit and told to the integrator. */
  async #done(record: Omit<CorrectionRecord, 'at'>): Promise<CorrectionResult> {
    const { tx } = this;
    const full: CorrectionRecord = { ...record, at: this.clock.iso() };
    tx.corrections.push(full);
    this.integrator.notify({
      type: 'transaction.corrected',
      key: `${tx.created!.transactionId}:transaction.corrected:${tx.corrections.length}`,
      occurredAt: full.at,
      data: { ...this.integrator.refs(), correction: full },
    });
    return { ...full, transactionId: tx.created!.transactionId };
  }
}

const nameOf = (p: Participant) => `${p.firstName} ${p.lastName}`;
