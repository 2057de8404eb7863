/**
 * The integrator's event log of one transaction (src/definitions/event-log.ts): started by the transaction with its
 * first event, it delivers the events in sequence order, one at a time, each with its attempts recorded; an event
 * the endpoint never took within the budget is marked failed (and the endpoint `failing`) and the next one goes on.
 * Once every transaction it names ended and every event settled, it stays for its retention to answer and to redeliver, then
 * returns its view; a redelivery after that starts it again from that view (src/client/event-log.ts).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import { EsignCallbackHealth, EsignReferenceId } from '../src/definitions/search-attributes.js';
import {
  appendLogged,
  eventLogAppendSignal,
  eventLogQuery,
  everyTransactionEnded,
  redeliverEventsUpdate,
  type DeliveryAttempt,
  type EndpointHealth,
  type EventLogInput,
  type EventLogResult,
  type EventLogView,
  type LoggedEvent,
  type RedeliverRequest,
} from '../src/definitions/event-log.js';
import type { IntegratorEvent } from '../src/definitions/transaction.js';
import { durationToMs } from '../src/util/duration.js';
import { Clock } from './clock.js';
import { versioningBehavior } from './versioning.js';

const ATTEMPTS_KEPT = 10;
const DEFAULT_RETENTION = '30 days';
const MAX_HISTORY = 5_000;

const { attemptLoggedEvent } = proxyActivities<EsignActivities>({
  // One attempt, answered whatever the endpoint said: Temporal retries it only when the worker dies under it.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  summary: 'Try to deliver an event to the integrator',
});

/** The log's state and its transitions; the workflow below reads as the delivery loop. */
class EventLog {
  readonly events: LoggedEvent[];
  health: EndpointHealth;
  /** Bumped by every message, so the retention wait starts again after one. */
  touched = 0;
  /** The event an attempt is under way for: a redelivery of it sends it once more after this delivery. */
  delivering: LoggedEvent | undefined;

  constructor(readonly input: EventLogInput) {
    this.events = [];
    this.health = input.health ?? 'ok';
    for (const e of input.events) this.append(e);
  }

  /** Takes an event once and numbers it after the last (src/definitions/event-log.ts `appendLogged`). */
  append(e: LoggedEvent | (IntegratorEvent & { sequence?: number })): void {
    this.touched++;
    appendLogged(this.events, e);
  }

  /** Whether every transaction the log names has ended: then it waits out its retention and closes. */
  get ended(): boolean {
    return everyTransactionEnded(this.events);
  }

  /** The next event to deliver: the lowest pending sequence, so the endpoint receives them in order. */
  next(): LoggedEvent | undefined {
    return this.events.find((e) => e.state === 'pending');
  }

  /** Keeps one attempt: the count, and the last few in full. */
  tried(e: LoggedEvent, attempt: DeliveryAttempt): void {
    e.attemptCount++;
    e.attempts = [...e.attempts, attempt].slice(-ATTEMPTS_KEPT);
  }

  settle(e: LoggedEvent, failure?: string): void {
    this.delivering = undefined;
    delete e.round;
    if (e.requeued) {
      // Asked again while this delivery ran: it goes once more, whatever this one's answer.
      delete e.requeued;
      return;
    }
    e.state = failure === undefined ? 'delivered' : 'failed';
    if (failure !== undefined) e.failure = failure;
    else delete e.failure;
    this.setHealth(failure === undefined ? 'ok' : 'failing');
  }

  setHealth(health: EndpointHealth): void {
    if (health === this.health) return;
    this.health = health;
    upsertSearchAttributes([{ key: EsignCallbackHealth, value: health }]);
  }

  redeliver(request: RedeliverRequest): { queued: number; sequences: number[] } {
    this.touched++;
    const chosen = this.events.filter((e) => (request.eventId ? e.id === request.eventId : e.sequence > (request.after ?? 0)));
    for (const e of chosen) {
      if (e === this.delivering) e.requeued = true;
      e.state = 'pending';
    }
    return { queued: chosen.length, sequences: chosen.map((e) => e.sequence) };
  }

  validateRedeliver(request: RedeliverRequest): void {
    if (request.eventId !== undefined && request.after !== undefined) throw new Error('give either an event id or --after, not both');
    if (request.eventId !== undefined && !this.events.some((e) => e.id === request.eventId))
      throw new Error(`no event ${request.eventId} in this log`);
    if (request.after !== undefined && (!Number.isInteger(request.after) || request.after < 0))
      throw new Error('after must be a sequence number (0 or more)');
    if (request.eventId === undefined && !this.events.some((e) => e.sequence > (request.after ?? 0)))
      throw new Error(`no event after ${request.after ?? 0} in this log`);
  }

  view(after = 0): EventLogView {
    return {
      referenceId: this.input.referenceId,
      endpoint: new URL(this.input.callbackUrl).origin,
      health: this.health,
      ended: this.ended,
      events: this.events.filter((e) => e.sequence > after),
    };
  }

  details(): string {
    const count = (s: LoggedEvent['state']) => this.events.filter((e) => e.state === s).length;
    return `${count('delivered')} delivered, ${count('pending')} pending, ${count('failed')} failed; endpoint ${this.health}`;
  }
}

function historyFull(): boolean {
  return workflowInfo().historyLength > MAX_HISTORY || workflowInfo().continueAsNewSuggested;
}

/** Tries one event until the endpoint takes it, refuses it, or the worker's budget runs out; records each attempt. */
async function deliver(log: EventLog, next: LoggedEvent, clock: Clock): Promise<void> {
  const event: IntegratorEvent & { sequence: number } = {
    type: next.type,
    key: next.key,
    occurredAt: next.occurredAt,
    data: next.data,
    sequence: next.sequence,
  };
  log.delivering = next;
  for (;;) {
    // A long delivery (an endpoint down, a large budget) hands over between attempts: the main loop continues as
    // new with this event still pending and its round's attempts counted.
    if (historyFull()) return;
    const n = (next.round ?? 0) + 1;
    next.round = n;
    let tried;
    try {
      tried = await attemptLoggedEvent({ callbackUrl: log.input.callbackUrl, event });
    } catch (err) {
      // The worker would not send it (its allow-list or its secrets changed): failed, kept, and redeliverable.
      const reason = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
      log.tried(next, { at: clock.iso(), ms: 0, error: reason });
      return log.settle(next, `the worker refused to send it: ${reason}`);
    }
    const { attempt, outcome, budget } = tried;
    log.tried(next, attempt);
    if (outcome === 'delivered') return log.settle(next);
    const answer = attempt.status !== undefined ? `HTTP ${attempt.status}` : `unreachable (${attempt.error})`;
    if (outcome === 'refused') return log.settle(next, `the endpoint refused it: ${answer}`);
    if (n >= budget.attempts) return log.settle(next, `no answer but ${answer} after ${n} attempts`);
    await sleep(Math.min(budget.maxDelayMs, budget.firstDelayMs * 2 ** (n - 1)));
  }
}

export async function esignEventLog(input: EventLogInput): Promise<EventLogResult> {
  const clock = new Clock();
  const log = new EventLog(input);
  setHandler(eventLogAppendSignal, (e) => log.append(e));
  setHandler(eventLogQuery, (q) => log.view(q?.after));
  setHandler(redeliverEventsUpdate, (r) => log.redeliver(r), { validator: (r: RedeliverRequest) => log.validateRedeliver(r) });
  upsertSearchAttributes([
    { key: EsignReferenceId, value: input.referenceId },
    { key: EsignCallbackHealth, value: log.health },
  ]);

  for (;;) {
    setCurrentDetails(log.details());
    if (historyFull()) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof esignEventLog>({ ...input, events: log.events, ended: log.ended, health: log.health });
    }
    const next = log.next();
    if (next) {
      await deliver(log, next, clock);
      continue;
    }

    // Nothing pending: wait for news; once the transaction ended, for its retention, then close with the view.
    const touched = log.touched;
    const news = () => log.next() !== undefined || log.touched !== touched;
    if (!log.ended) {
      await condition(news);
      continue;
    }
    if (await condition(news, durationToMs(input.retention ?? DEFAULT_RETENTION))) continue;
    await condition(allHandlersFinished);
    return { ...log.view(), callbackUrl: input.callbackUrl };
  }
}

// Auto-upgrade: a log waits out its retention on whatever version is current; a change needs patched().
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), esignEventLog);
