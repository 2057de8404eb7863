/**
 * The integrator's event log: one workflow per transaction with a `callbackUrl` (id `esign-events-<referenceId>`),
 * started by the transaction with its first event. It numbers nothing itself (the transaction gives each event its
 * per-transaction `sequence`), delivers the events in sequence order, one at a time, keeps every delivery attempt,
 * and outlives the transaction's run: the run closes when its outcome is set, and the log delivers what is still
 * pending afterwards, then stays to answer and redeliver for its retention (docs/integrator-events.md).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { eventId } from '../util/event-id.js';
import type { IntegratorEvent } from './transaction.js';

export const EVENT_LOG_WORKFLOW_TYPE = 'esignEventLog';

export function eventLogIdFor(referenceId: string): string {
  return `esign-events-${referenceId}`;
}

/** One delivery attempt: when, how long, and what the endpoint answered (an HTTP status) or why not (an error). */
export interface DeliveryAttempt {
  at: string;
  ms: number;
  status?: number;
  error?: string;
}

export type LoggedEventState = 'pending' | 'delivered' | 'failed';

export interface LoggedEvent {
  sequence: number;
  /** The `webhook-id`: the same for every attempt and every redelivery. */
  id: string;
  /** What the id is derived from (the transaction's key for the event). */
  key: string;
  type: IntegratorEvent['type'];
  occurredAt: string;
  state: LoggedEventState;
  /** Attempts so far, including those of redeliveries. */
  attemptCount: number;
  /** The last attempts (at most ten), oldest first. */
  attempts: DeliveryAttempt[];
  /** Why it failed, once the retry budget ran out or the endpoint refused it for good. */
  failure?: string;
  /** The event itself, as sent (its body's `data`). */
  data: Record<string, unknown>;
  /** Attempts in the delivery under way (its budget's count), carried across the log's continue-as-new. */
  round?: number;
  /** A redelivery asked while a delivery of it ran: it goes once more after that one. */
  requeued?: boolean;
}

/** The endpoint's health as the log sees it: `failing` from an event given up until the next one delivered. */
export type EndpointHealth = 'ok' | 'failing';

export interface EventLogView {
  referenceId: string;
  /** The callback URL's origin (its path may hold a token, so it is not shown). */
  endpoint: string;
  health: EndpointHealth;
  /**
   * Whether every transaction the log names has ended (each has its outcome event in the log): a referenceId used
   * again for a later transaction opens the log again until that one ends.
   */
  ended: boolean;
  events: LoggedEvent[];
}

export interface EventLogInput {
  referenceId: string;
  callbackUrl: string;
  /** Events in sequence order; a run continued as new, or restarted for a redelivery, carries the whole log. */
  events: (LoggedEvent | (IntegratorEvent & { sequence: number }))[];
  /** What the log said when this input was written; the log itself reads it from `events`. */
  ended?: boolean;
  health?: EndpointHealth;
  /** How long the log stays after the transaction ended and every event settled (default 30 days). */
  retention?: string;
}

/**
 * What a closed log returns: its last view and the callback URL (encrypted like every payload), which a redelivery
 * after the end starts a new run with.
 */
export type EventLogResult = EventLogView & { callbackUrl: string };

/**
 * The transaction's next event, numbered by the transaction; or, without a number, one sent after the transaction
 * ended (`transaction.completed_late`), which the log numbers after the last it holds.
 */
export const eventLogAppendSignal = defineSignal<[IntegratorEvent & { sequence?: number }]>('eventLogAppend');

export const eventLogQuery = defineQuery<EventLogView, [{ after?: number }?]>('eventLog');

/** Which events to send again: every one after a sequence number, or one by its `webhook-id`. */
export interface RedeliverRequest {
  after?: number;
  eventId?: string;
}

/** Sends the chosen events again (same `webhook-id`), in order, once those still pending went; answers how many. */
export const redeliverEventsUpdate = defineUpdate<{ queued: number; sequences: number[] }, [RedeliverRequest]>('redeliverEvents');

/** The events that end a transaction. */
const ENDS = new Set<IntegratorEvent['type']>([
  'transaction.completed',
  'transaction.declined',
  'transaction.cancelled',
  'transaction.expired',
  'transaction.deleted',
]);

/**
 * Every transaction the log names has ended (the log's `ended`: then it may close after its retention). Each event's
 * key starts with its provider transaction's id (the referenceId, for one never created), and each of those has an
 * end event: a referenceId used again for a later transaction opens the log again until that one ends too. A late
 * completion ends its transaction as its end did. The log (workflows/event-log.ts) and a client reading a closed log's
 * history (src/client/event-log-recovery.ts) both decide it so.
 */
export function everyTransactionEnded(events: readonly Pick<LoggedEvent, 'key' | 'type'>[]): boolean {
  const named = new Set<string>();
  const ended = new Set<string>();
  for (const e of events) {
    const transaction = e.key.slice(0, Math.max(0, e.key.indexOf(':')));
    named.add(transaction);
    if (ENDS.has(e.type) || e.type === 'transaction.completed_late') ended.add(transaction);
  }
  return ended.size > 0 && [...named].every((t) => ended.has(t));
}

/**
 * Takes an event into a log once (by its key, which names its provider transaction) and numbers it after the last: the
 * transaction hands its events over in order, so the numbers are its own; a referenceId used again for a later
 * transaction, or a late completion's event, continues the same numbering instead of colliding with it. An event that
 * already carries its state (a log's own, carried over) keeps its number. The log (workflows/event-log.ts) and a client
 * rebuilding a closed log from its input and signals (src/client/event-log-recovery.ts) both take events so.
 */
export function appendLogged(events: LoggedEvent[], e: LoggedEvent | (IntegratorEvent & { sequence?: number })): void {
  if (events.some((x) => x.key === e.key)) return; // a repeated hand-over
  const logged: LoggedEvent =
    'state' in e
      ? e
      : {
          sequence: (events.at(-1)?.sequence ?? 0) + 1,
          id: eventId(e.key),
          key: e.key,
          type: e.type,
          occurredAt: e.occurredAt,
          state: 'pending',
          attemptCount: 0,
          attempts: [],
          data: e.data,
        };
  events.push(logged);
  events.sort((a, b) => a.sequence - b.sequence);
}
