/**
 * What the integrator and operators hear while a transaction is followed:
 * participants' progress (events to `callbackUrl`, search attributes, the Web
 * UI's line) and reminders with fresh signing URLs. Events go out beside the
 * transaction, without holding it up; `settled()` says when they all have.
 */
import { condition, log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { ParticipantState } from '../../activities/transactions.js';
import { durationToMs } from '../../src/util/duration.js';
import { REPORT, step } from '../activity-options.js';
import type { IntegratorEvent } from '../../src/definitions/transaction.js';
import { EsignSignedCount, EsignWaitingFor } from '../../src/definitions/search-attributes.js';
import type { Clock } from '../clock.js';
import type { SigningTransaction } from './machine.js';
import type { Steps } from './steps.js';

type EventDraft = Omit<IntegratorEvent, 'occurredAt'> & { occurredAt?: string };

export class Integrator {
  #pending = 0;

  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
    private readonly clock: Clock,
  ) {}

  /** Sends an event to the integrator's callback without holding up the transaction; retried by Temporal. */
  notify(event: EventDraft): void {
    const callbackUrl = this.tx.input?.callbackUrl;
    if (!callbackUrl) return;
    const full: IntegratorEvent = { ...event, occurredAt: event.occurredAt ?? this.clock.iso() };
    this.#pending++;
    void step(REPORT, `Tell the integrator: ${event.type}`)
      .notifyIntegrator({ callbackUrl, event: full })
      .then(
        () => void this.#pending--,
        (err: unknown) => {
          this.#pending--;
          log.error('an event could not be delivered to the callback', { type: event.type, error: (err as Error).message });
        },
      );
  }

  /** Waits until every event sent so far was delivered or given up. */
  async flush(): Promise<void> {
    await condition(() => this.settled);
  }

  /** Whether every event sent so far was delivered or given up (for a wait that must also notice other work). */
  get settled(): boolean {
    return this.#pending === 0;
  }

  /** The provider's ids and our reference, in every event. */
  refs(): { referenceId: string; transactionId: string } {
    return { referenceId: this.tx.input!.referenceId, transactionId: this.tx.created!.transactionId };
  }

  /** Takes the provider's report of who did what; announces new signatures and updates what operators see. */
  applyProgress(states: ParticipantState[] | undefined): void {
    const { progress } = this.tx;
    if (!progress?.apply(states)) return;
    for (const s of progress.takeNewlySigned()) {
      this.notify({
        type: 'participant.signed',
        key: `${this.tx.created!.transactionId}:participant.signed:${s.id}`,
        ...(s.at ? { occurredAt: s.at } : {}),
        data: {
          ...this.refs(),
          participant: { id: s.id, name: this.tx.nameOf(s.id) },
          signedAt: s.at ?? null,
          signed: progress.signedCount,
          of: this.tx.participants.length,
        },
      });
    }
    upsertSearchAttributes([
      { key: EsignSignedCount, value: progress.signedCount },
      { key: EsignWaitingFor, value: progress.waiting.map((p) => p.id) },
    ]);
    setCurrentDetails(this.tx.currentDetails());
  }

  /** Plans the first reminder, once the transaction is sent. */
  planFirstReminder(): void {
    const plan = this.tx.input!.reminders;
    if (plan && this.tx.input!.callbackUrl) this.tx.reminders.nextAt = this.clock.now() + durationToMs(plan.firstAfter);
  }

  /** Whether a reminder is due now (awaiting signatures only; none once overdue). */
  reminderDue(): boolean {
    const { nextAt } = this.tx.reminders;
    return (
      this.tx.input!.reminders !== undefined && nextAt !== null && this.tx.phase === 'awaiting_signatures' && this.clock.now() >= nextAt
    );
  }

  /** Reminds each participant still to sign, with a fresh signing URL, through the integrator (embedded signing). */
  async remind(): Promise<void> {
    const plan = this.tx.input!.reminders!;
    const { esignId, transactionId } = this.tx.created!;
    const n = this.tx.reminders.sent + 1;
    for (const p of this.tx.progress!.waiting) {
      const style = this.tx.input!.iframeStyle;
      const { url } = await this.steps.provider(`Issue a signing URL for reminder ${n}`, (a) =>
        a.createSigningUrl({ esignId, participantIds: [p.id], ...(style ? { style } : {}) }),
      );
      this.notify({
        type: 'reminder.due',
        key: `${transactionId}:reminder.due:${n}:${p.id}`,
        data: {
          ...this.refs(),
          participant: { id: p.id, name: this.tx.nameOf(p.id) },
          signingUrl: url,
          reminder: n,
          of: plan.maxCount,
          deadline: new Date(this.tx.deadlineAt).toISOString(),
        },
      });
    }
    // From now when reminders are late (a draft sent late, a worker outage): missed ones are not sent in a burst.
    const base = Math.max(this.tx.reminders.nextAt!, this.clock.now());
    const next = base + durationToMs(plan.every);
    this.tx.reminders = { sent: n, nextAt: n >= plan.maxCount || next >= this.tx.deadlineAt ? null : next };
  }
}
