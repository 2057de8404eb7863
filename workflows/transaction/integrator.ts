/**
 * What the integrator and operators hear while a transaction is followed:
 * participants' progress (events to `callbackUrl`, search attributes, the Web
 * UI's line) and reminders with fresh signing URLs. Events are numbered here
 * and handed, in order, to the transaction's event log (its own workflow,
 * started with the first event), which delivers them: the transaction never
 * waits on the integrator's endpoint. `settled` says when every event so far
 * was handed over.
 */
import { condition, getExternalWorkflowHandle, log, ParentClosePolicy, setCurrentDetails, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError as WorkflowExecutionAlreadyStarted } from '@temporalio/common';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogAppendSignal, eventLogIdFor, type EventLogInput } from '../../src/definitions/event-log.js';
import type { ParticipantState } from '../../activities/transactions.js';
import { durationToMs } from '../../src/util/duration.js';
import type { IntegratorEvent } from '../../src/definitions/transaction.js';
import { EsignSignedCount, EsignWaitingFor } from '../../src/definitions/search-attributes.js';
import type { Clock } from '../clock.js';
import type { SigningTransaction } from './machine.js';
import type { Steps } from './steps.js';

type EventDraft = Omit<IntegratorEvent, 'occurredAt'> & { occurredAt?: string };

export class Integrator {
  #pending = 0;
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
    const start = async () => {
      const input: EventLogInput = { referenceId, callbackUrl, events: [event] };
      await startChild(EVENT_LOG_WORKFLOW_TYPE, {
        workflowId,
        args: [input],
        // The log outlives this run: it delivers what is pending after the transaction ended.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: `Events to the integrator for ${referenceId}`,
      });
    };
    if (event.sequence === 1) {
      try {
        return await start();
      } catch (err) {
        // A log of an earlier transaction with this referenceId still runs: it takes (and numbers) ours too.
        if (!(err instanceof WorkflowExecutionAlreadyStarted)) throw err;
      }
    }
    try {
      await getExternalWorkflowHandle(workflowId).signal(eventLogAppendSignal, event);
    } catch (err) {
      // The log closed (its retention after an earlier transaction with this referenceId ran out): a new one.
      log.warn('the event log was not running; starting it again', { sequence: event.sequence, error: (err as Error).message });
      await start();
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
