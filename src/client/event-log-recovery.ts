/**
 * The last state of a closed event log run (workflows/event-log.ts), which its next run starts from, so the numbering
 * goes on and what it held stays redeliverable however it ended. A log closed after its retention returns its view as
 * its result. A run that ended otherwise (`temporal workflow terminate`, a failure, a timeout, a cancel) has no
 * result, but its history holds everything it was given: its start input (the callback URL, the events it carried),
 * the events signalled to it, its delivery attempts and the redeliveries asked of it. Its state is read from that
 * history, in two ways:
 *
 * 1. its `eventLog` query: a closed run still answers it, replayed by a worker from its history with the log's own
 *    code, so the view is exactly the log's (attempts, failures, the endpoint's health); then any event signalled to
 *    it that its last workflow task did not take yet (the terminate came first) is added after, as the log would;
 * 2. where no worker answers (none polls its task queue, or the query times out), the history itself, followed as
 *    the log follows it: its start input, then its signals, attempts and redeliveries in order.
 *
 * Fail closed: a log whose history this client cannot decode (a codec key it does not hold) is not started again at
 * all (`EventLogUnreadable`), since a fresh log would number from 1 again; the caller fails and is retried, and the
 * log continues once the key is back.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import {
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
} from '../definitions/event-log.js';
import type { IntegratorEvent } from '../definitions/transaction.js';
import { eventId } from '../util/event-id.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

/** The log's own limit on the attempts it keeps per event (workflows/event-log.ts). */
const ATTEMPTS_KEPT = 10;
/** How long a closed run's query may take: a worker replays its whole history to answer it. */
const QUERY_TIMEOUT_MS = 10_000;

/** A closed log whose last state cannot be read: it is not started again, which would number its events from 1. */
export class EventLogUnreadable extends Error {
  override readonly name = 'EventLogUnreadable';
  constructor(
    readonly referenceId: string,
    readonly closedAs: string,
    reasons: readonly unknown[],
  ) {
    super(
      `the event log of ${referenceId} (${closedAs.toLowerCase()}) cannot be read, so it is not started again ` +
        `(its events would be numbered from 1 again): ${reasons.map((r) => (r instanceof Error ? r.message : String(r))).join('; ')}`,
    );
  }
}

/** A closed log's last view, with what its next run needs: the callback URL and, when its history says, its retention. */
export type ClosedEventLog = EventLogResult & { retention?: string };

export interface ReadClosedOptions {
  /** How long the closed run's query may take before its history is followed instead (10 s). */
  queryTimeoutMs?: number;
}

/**
 * The last state of the closed run `runId` of a log: its result if it completed, else read from its history (above).
 * Throws `EventLogUnreadable` when neither works; `WorkflowNotFoundError` when the run is gone (past the namespace's
 * retention); other errors (the server unreachable) as they come, so a caller retries rather than starts afresh.
 */
export async function readClosedEventLog(
  client: Client,
  referenceId: string,
  run: { workflowId: string; runId: string; status: string },
  options: ReadClosedOptions = {},
): Promise<ClosedEventLog> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  if (run.status === 'COMPLETED') {
    try {
      return (await handle.result()) as EventLogResult;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw err;
      throw new EventLogUnreadable(referenceId, run.status, [err]);
    }
  }
  const history = (await handle.fetchHistory()).events ?? [];
  let input: EventLogInput;
  try {
    input = await startInputOf(client, history);
  } catch (err) {
    throw new EventLogUnreadable(referenceId, run.status, [err]);
  }
  let view: EventLogView | undefined;
  let queryFailure: unknown;
  try {
    const deadline = Date.now() + (options.queryTimeoutMs ?? QUERY_TIMEOUT_MS);
    view = await client.withDeadline(deadline, () => handle.query(eventLogQuery, { after: 0 }));
  } catch (err) {
    queryFailure = err;
  }
  try {
    const log = new FollowedLog(view ? { ...input, events: view.events, health: view.health } : input);
    // After the query's view only the signals it may not have taken yet; without it, the whole history.
    await log.follow(client, history, view ? 'signals' : 'all');
    return {
      ...log.view(input.referenceId, input.callbackUrl),
      callbackUrl: input.callbackUrl,
      ...(input.retention !== undefined ? { retention: input.retention } : {}),
    };
  } catch (err) {
    throw new EventLogUnreadable(referenceId, run.status, queryFailure === undefined ? [err] : [queryFailure, err]);
  }
}

/** Decodes payloads with the client's codecs (in the reverse of their encoding order) and converter. */
async function decoded<T>(client: Client, payloads: Payloads): Promise<T[]> {
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  let out = (payloads?.payloads ?? []) as Parameters<(typeof payloadCodecs)[number]['decode']>[0];
  for (const codec of [...payloadCodecs].reverse()) out = await codec.decode(out);
  return out.map((p) => payloadConverter.fromPayload<T>(p));
}

async function startInputOf(client: Client, history: readonly HistoryEvent[]): Promise<EventLogInput> {
  const started = history[0]?.workflowExecutionStartedEventAttributes;
  if (!started) throw new Error('its history has no start event');
  const [input] = await decoded<EventLogInput>(client, started.input);
  if (!input?.callbackUrl || !Array.isArray(input.events)) throw new Error('its start input is not an event log input');
  return input;
}

/** What `attemptLoggedEvent` answers (activities/completion.ts). */
interface Answer {
  attempt: DeliveryAttempt;
  outcome: 'delivered' | 'retry' | 'refused';
  budget: { attempts: number };
}

/** The log's state as its code keeps it (workflows/event-log.ts `EventLog`), followed through a history. */
class FollowedLog {
  readonly events: LoggedEvent[] = [];
  health: EndpointHealth;
  /** Attempts scheduled, by their scheduled event's id: the event's key. */
  readonly #attempts = new Map<string, string>();
  /** The event a delivery is under way for (the log's `delivering`), from its first attempt until it settles. */
  #delivering: string | undefined;

  constructor(input: Pick<EventLogInput, 'events' | 'health'>) {
    this.health = input.health ?? 'ok';
    for (const e of input.events) this.append(e);
  }

  /** As the log's `append`: an event once by its key, numbered after the last unless it is a logged one. */
  append(e: LoggedEvent | (IntegratorEvent & { sequence?: number })): void {
    if (this.events.some((x) => x.key === e.key)) return;
    const logged: LoggedEvent =
      'state' in e
        ? e
        : {
            sequence: (this.events.at(-1)?.sequence ?? 0) + 1,
            id: eventId(e.key),
            key: e.key,
            type: e.type,
            occurredAt: e.occurredAt,
            state: 'pending',
            attemptCount: 0,
            attempts: [],
            data: e.data,
          };
    this.events.push(logged);
    this.events.sort((a, b) => a.sequence - b.sequence);
  }

  async follow(client: Client, history: readonly HistoryEvent[], what: 'signals' | 'all'): Promise<void> {
    for (const h of history) {
      const signaled = h.workflowExecutionSignaledEventAttributes;
      if (signaled?.signalName === eventLogAppendSignal.name) {
        const [e] = await decoded<IntegratorEvent & { sequence?: number }>(client, signaled.input);
        if (e) this.append(e);
      }
      if (what === 'signals') continue;
      const scheduled = h.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'attemptLoggedEvent') {
        const [asked] = await decoded<{ event: { key: string } }>(client, scheduled.input);
        if (asked) this.#attempts.set(String(h.eventId), (this.#delivering = asked.event.key));
      }
      const completed = h.activityTaskCompletedEventAttributes;
      const key = completed ? this.#attempts.get(String(completed.scheduledEventId)) : undefined;
      if (completed && key !== undefined) {
        const [answer] = await decoded<Answer>(client, completed.result);
        if (answer) this.#tried(key, answer);
      }
      // An attempt the worker refused to make: the log marks it failed; here it stays pending, and the next run's
      // attempt is refused (and recorded) again, or sent if the worker's policy changed since.
      const failed = h.activityTaskFailedEventAttributes ?? h.activityTaskTimedOutEventAttributes;
      if (failed && this.#attempts.has(String(failed.scheduledEventId))) this.#delivering = undefined;
      const accepted = h.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
      if (accepted?.name === redeliverEventsUpdate.name) {
        const [request] = await decoded<RedeliverRequest>(client, accepted.args);
        if (request) this.#redeliver(request);
      }
    }
  }

  /** As the log's `deliver` and `settle`: one attempt's answer. */
  #tried(key: string, answer: Answer): void {
    const e = this.events.find((x) => x.key === key);
    if (!e) return;
    const n = (e.round ?? 0) + 1;
    e.round = n;
    e.attemptCount++;
    e.attempts = [...e.attempts, answer.attempt].slice(-ATTEMPTS_KEPT);
    const said = answer.attempt.status !== undefined ? `HTTP ${answer.attempt.status}` : `unreachable (${answer.attempt.error})`;
    let failure: string | undefined;
    if (answer.outcome === 'refused') failure = `the endpoint refused it: ${said}`;
    else if (answer.outcome !== 'delivered') {
      if (n < answer.budget.attempts) return;
      failure = `no answer but ${said} after ${n} attempts`;
    }
    delete e.round;
    this.#delivering = undefined;
    if (e.requeued) {
      delete e.requeued;
      return;
    }
    e.state = failure === undefined ? 'delivered' : 'failed';
    if (failure !== undefined) e.failure = failure;
    else delete e.failure;
    this.health = failure === undefined ? 'ok' : 'failing';
  }

  /** As the log's `redeliver`: the chosen events pending again; one being delivered goes once more after. */
  #redeliver(request: RedeliverRequest): void {
    for (const e of this.events.filter((x) => (request.eventId ? x.id === request.eventId : x.sequence > (request.after ?? 0)))) {
      if (e.key === this.#delivering) e.requeued = true;
      e.state = 'pending';
    }
  }

  /** The view a closed log answers with: a redelivery asked during an attempt is just pending in the next run. */
  view(referenceId: string, callbackUrl: string): EventLogView {
    const events = this.events.map(({ requeued: _again, ...e }) => e);
    return { referenceId, endpoint: new URL(callbackUrl).origin, health: this.health, ended: everyTransactionEnded(events), events };
  }
}
