/**
 * What the integrator and operators hear while a transaction is followed:
 * participants' progress (events to `callbackUrl`, search attributes, the Web
 * UI's line) and reminders with fresh signing URLs. Events are numbered here
 * and handed, in order, to the transaction's event log (its own workflow,
 * started with the first event), which delivers them: the transaction never
 * waits on the integrator's endpoint. `settled` says when every event so far
 * was handed over.
 */
import {
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  ParentClosePolicy,
  setCurrentDetails,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError as WorkflowExecutionAlreadyStarted } from '@temporalio/common';
import { REPORT, step } from '../activity-options.js';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogAppendSignal, eventLogIdFor, type EventLogInput } from '../../src/definitions/event-log.js';
import type { ParticipantState } from '../../activities/transactions.js';
import { durationToMs } from '../../src/util/duration.js';
import type { IntegratorEvent } from '../../src/definitions/transaction.js';
import { EsignSignedCount, EsignWaitingFor } from '../../src/definitions/search-attributes.js';
import type { Clock } from '../clock.js';
import type { SigningTransaction } from './machine.js';
import { providerRefusal, type Steps } from './steps.js';

type EventDraft = Omit<IntegratorEvent, 'occurredAt'> & { occurredAt?: string };

export class Integrator {
  #pending = 0;
  /** The reminder round under way: who has had theirs (a round cut short goes on where it stopped). */
  #round: { n: number; done: Set<string> } | undefined;
  /** Hand-overs to the log, one after the other: the log receives the events in their order. */
  #chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
    private readonly clock: Clock,
  ) {}

  /** Numbers an event and hands it to the event log, after those before it, without holding up the transaction. */
  notify(event: EventDraft): void {
    const callbackUrl = this.tx.input?.callbackUrl;
    if (!callbackUrl) return;
    const numbered = { ...event, occurredAt: event.occurredAt ?? this.clock.iso(), sequence: ++this.tx.eventsSent };
    this.#pending++;
    this.#chain = this.#chain
      .then(() => this.#handOver(callbackUrl, numbered))
      .catch((err: unknown) => {
        // Not dropped silently: the run's log says so, and the operator's redelivery covers what the log holds.
        log.error('an event could not be handed to the event log', {
          type: event.type,
          sequence: numbered.sequence,
          error: (err as Error).message,
        });
      })
      .finally(() => void this.#pending--);
  }

  async #handOver(callbackUrl: string, event: IntegratorEvent & { sequence: number }): Promise<void> {
    const referenceId = this.tx.input!.referenceId;
    const workflowId = eventLogIdFor(referenceId);
    if (event.sequence === 1) {
      try {
        const input: EventLogInput = { referenceId, callbackUrl, events: [event] };
        await startChild(EVENT_LOG_WORKFLOW_TYPE, {
          workflowId,
          args: [input],
          // Never a fresh log over a closed one: a referenceId used again continues its numbering (below).
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          // The log outlives this run: it delivers what is pending after the transaction ended.
          parentClosePolicy: ParentClosePolicy.ABANDON,
          staticSummary: `Events to the integrator for ${referenceId}`,
        });
        return;
      } catch (err) {
        // A log of an earlier transaction with this referenceId runs (it takes and numbers ours too), or closed.
        if (!(err instanceof WorkflowExecutionAlreadyStarted)) throw err;
      }
    }
    try {
      await getExternalWorkflowHandle(workflowId).signal(eventLogAppendSignal, event);
    } catch {
      // The log closed (its retention after an earlier transaction with this referenceId ran out): it starts
      // again from its last view, which only an activity can read, so the numbering goes on after its events.
      log.info('the event log was closed; starting it again from its last view', { sequence: event.sequence });
      await step(REPORT, 'Start the event log again from its last view').appendToEventLog({ referenceId, callbackUrl, event });
    }
  }

  /** Waits until every event so far was handed to the event log. */
  async flush(): Promise<void> {
    await condition(() => this.settled);
  }

  /** Whether every event so far was handed to the event log (for a wait that must also notice other work). */
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
    this.participantsChanged();
  }

  /** Who signed and who is awaited, as operators see them (search attributes, the Web UI's line). */
  participantsChanged(): void {
    const progress = this.tx.progress!;
    this.tx.attributes.set([
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

  /** Reminders from the first again (a resend): a fresh round, planned from now. */
  restartReminders(): void {
    this.#round = undefined;
    this.tx.reminders = { sent: 0, nextAt: null };
    this.planFirstReminder();
  }

  /** Whether a reminder is due now (awaiting signatures only; none once overdue). */
  reminderDue(): boolean {
    const { nextAt } = this.tx.reminders;
    return (
      this.tx.input!.reminders !== undefined && nextAt !== null && this.tx.phase === 'awaiting_signatures' && this.clock.now() >= nextAt
    );
  }

  /**
   * Reminds each participant still to sign, with a fresh signing URL, through the integrator (embedded signing).
   * Never holds the loop: each URL gets a few attempts; while the provider's endpoint fails, the rest of the round
   * waits for a later try (the loop does its other work meanwhile), and a participant the provider refuses a URL
   * for (a 4xx) is skipped this round. Work that arrives (a completion, a cancel) is done before the next URL.
   */
  async remind(): Promise<void> {
    const plan = this.tx.input!.reminders!;
    const { esignId, transactionId } = this.tx.created!;
    const n = this.tx.reminders.sent + 1;
    const resends = this.tx.corrections.filter((c) => c.kind === 'resend').length;
    if (this.#round?.n !== n) this.#round = { n, done: new Set() };
    const round = this.#round;
    for (const p of this.tx.progress!.waiting) {
      if (round.done.has(p.id)) continue;
      // Work came (done first), or a replace made it a draft meanwhile (no reminders for a draft).
      if (this.tx.hasWork() || this.tx.phase !== 'awaiting_signatures') return;
      const style = this.tx.input!.iframeStyle;
      let url: string;
      try {
        ({ url } = await this.steps.attempt(`Issue a signing URL for reminder ${n}`, (a) =>
          a.createSigningUrl({ esignId, participantIds: [p.id], ...(style ? { style } : {}) }),
        ));
      } catch (err) {
        if (isCancellation(err)) throw err;
        const refusal = providerRefusal(err);
        if (!refusal) {
          this.postponeReminder('the provider did not issue a signing URL', err);
          return;
        }
        round.done.add(p.id);
        log.warn('the provider refused a signing URL for a reminder: this participant is not reminded this time', {
          reminder: n,
          status: refusal.status,
          error: refusal.message,
        });
        continue;
      }
      round.done.add(p.id);
      this.notify({
        type: 'reminder.due',
        // After a resend the rounds count from 1 again: their keys name how many resends came before.
        key: `${transactionId}:reminder.due:${resends > 0 ? `${resends}.` : ''}${n}:${p.id}`,
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

  /**
   * Tries the due reminder again after a poll interval (never past the deadline): the provider could not serve it
   * now. Its round remembers who was reminded already.
   */
  postponeReminder(why: string, err?: unknown): void {
    const cause = err === undefined ? undefined : ((err as { cause?: Error }).cause ?? (err as Error)).message;
    log.warn(`${why}; the reminder is tried again later`, { reminder: this.tx.reminders.sent + 1, ...(cause ? { error: cause } : {}) });
    const at = this.clock.now() + this.tx.pollMs;
    this.tx.reminders = { ...this.tx.reminders, nextAt: at >= this.tx.deadlineAt ? null : at };
  }
}
