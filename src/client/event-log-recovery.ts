/**
 * The last state of a closed event log run (workflows/event-log.ts), which its next run starts from, so the numbering
 * goes on and what it held stays redeliverable however it ended. A log closed after its retention returns its view as
 * its result. A run that ended otherwise (`temporal workflow terminate`, a failure, a timeout, a cancel) has no
 * result: its state is its `eventLog` query, which a closed run still answers, replayed by a worker of its task queue
 * from its history with the log's own code, so the view is exactly the log's (attempts, failures, the endpoint's
 * health), events signalled to it that its last workflow task had not taken (the terminate came first) included:
 * the worker takes them, as the log does, before it answers. This client does not work that state out of the history
 * itself, which would be a second copy of the log. One run has no query to ask: one terminated before any worker
 * started a workflow task of it (the server refuses its query, temporalio/temporal#4867); it ran none of the log's
 * code, so its state is what it was given (`given` below).
 *
 * Fail closed: a log whose state cannot be read is not started again at all (`EventLogUnreadable`), since a fresh log
 * would number from 1 again: no worker answers its query (none polls its task queue), or this client cannot decode
 * its history (a codec key it does not hold). The caller fails and is retried, and the log continues once a worker
 * runs, or the key is back. The transaction's own hand-over (activity `appendToEventLog`) runs on a worker of the
 * queue the log runs on, so a worker is there to answer; a backend or an operator listing or redelivering needs one.
 */
import { isGrpcDeadlineError, isGrpcServiceError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import {
  appendLogged,
  eventLogAppendSignal,
  eventLogQuery,
  everyTransactionEnded,
  type EventLogInput,
  type EventLogResult,
  type EventLogView,
  type LoggedEvent,
} from '../definitions/event-log.js';
import type { IntegratorEvent } from '../definitions/transaction.js';
import { PayloadErased } from '../codec/data-keys.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

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

/**
 * The PayloadErased in `err`'s causes, else `otherwise`: a log whose referenceId was erased (`esign erase`) is not
 * unreadable by accident but gone by decision, and its caller treats it as a log that never ran.
 */
function erasedOr(err: unknown, otherwise: Error): unknown {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) if (e instanceof PayloadErased) return e;
  return otherwise;
}

/** A closed log's last view, with what its next run needs: the callback URL and, when its history says, its retention. */
export type ClosedEventLog = EventLogResult & { retention?: string };

export interface ReadClosedOptions {
  /** How long the closed run's query may take before the log is taken as unreadable (10 s). */
  queryTimeoutMs?: number;
}

/**
 * The last state of the closed run `runId` of a log (on `taskQueue`): its result if it completed, else its query
 * (above). Throws `EventLogUnreadable` when it cannot be read; `WorkflowNotFoundError` when the run is gone (past the
 * namespace's retention); other errors (the server unreachable) as they come, so a caller retries rather than starts
 * afresh.
 */
export async function readClosedEventLog(
  client: Client,
  referenceId: string,
  run: { workflowId: string; runId: string; status: string; taskQueue: string },
  options: ReadClosedOptions = {},
): Promise<ClosedEventLog> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  if (run.status === 'COMPLETED') {
    try {
      return (await handle.result()) as EventLogResult;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw err;
      throw erasedOr(err, new EventLogUnreadable(referenceId, run.status, [err]));
    }
  }
  const history = (await handle.fetchHistory()).events ?? [];
  let input: EventLogInput;
  let unqueried: EventLogView | undefined;
  try {
    input = await startInputOf(client, history);
    if (!history.some((h) => h.workflowTaskStartedEventAttributes)) unqueried = given(input, await signalledEvents(client, history));
  } catch (err) {
    throw erasedOr(err, new EventLogUnreadable(referenceId, run.status, [err]));
  }
  const view = unqueried ?? (await queried(client, referenceId, run, options.queryTimeoutMs ?? QUERY_TIMEOUT_MS));
  return { ...view, callbackUrl: input.callbackUrl, ...(input.retention !== undefined ? { retention: input.retention } : {}) };
}

/** A closed run's `eventLog` query, answered by a worker of its task queue within `timeoutMs`. */
async function queried(
  client: Client,
  referenceId: string,
  run: { workflowId: string; runId: string; status: string; taskQueue: string },
  timeoutMs: number,
): Promise<EventLogView> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  try {
    return await client.withDeadline(Date.now() + timeoutMs, () => handle.query(eventLogQuery, { after: 0 }));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw err;
    const reason = isGrpcDeadlineError(err)
      ? `no worker answered its query within ${timeoutMs / 1000} s: start a worker on ${run.taskQueue}`
      : grpcCodeOf(err) === FAILED_PRECONDITION
        ? `no worker polls its task queue (the server: ${innermostMessage(err)}): start a worker on ${run.taskQueue}`
        : err;
    throw new EventLogUnreadable(referenceId, run.status, [reason]);
  }
}

/**
 * The state of a run that never started a workflow task: the events it was given, in its start input and signalled,
 * taken as the log's `append` takes them (workflows/event-log.ts `EventLog.append`): once by their key; a logged one
 * as it is, any other numbered after the last (the number it was handed over with is not the log's), pending. Done
 * here because no worker can: no query reaches such a run.
 */
function given(input: EventLogInput, signalled: readonly IntegratorEvent[]): EventLogView {
  const events: LoggedEvent[] = [];
  for (const e of [...input.events, ...signalled]) appendLogged(events, e);
  const { referenceId, callbackUrl, health = 'ok' } = input;
  return { referenceId, endpoint: new URL(callbackUrl).origin, health, ended: everyTransactionEnded(events), events };
}

/** Decodes payloads with the client's codecs (in the reverse of their encoding order) and converter. */
async function decoded<T>(client: Client, payloads: Payloads): Promise<T[]> {
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  let out = (payloads?.payloads ?? []) as Parameters<(typeof payloadCodecs)[number]['decode']>[0];
  for (const codec of [...payloadCodecs].reverse()) out = await codec.decode(out);
  return out.map((p) => payloadConverter.fromPayload<T>(p));
}

/** Its start input: the callback URL and the retention its next run goes on with. */
async function startInputOf(client: Client, history: readonly HistoryEvent[]): Promise<EventLogInput> {
  const started = history[0]?.workflowExecutionStartedEventAttributes;
  if (!started) throw new Error('its history has no start event');
  const [input] = await decoded<EventLogInput>(client, started.input);
  if (!input?.callbackUrl || !Array.isArray(input.events)) throw new Error('its start input is not an event log input');
  return input;
}

/** The events signalled to it, in order. */
async function signalledEvents(client: Client, history: readonly HistoryEvent[]): Promise<IntegratorEvent[]> {
  const events: IntegratorEvent[] = [];
  for (const h of history) {
    const signaled = h.workflowExecutionSignaledEventAttributes;
    if (signaled?.signalName !== eventLogAppendSignal.name) continue;
    const [e] = await decoded<IntegratorEvent>(client, signaled.input);
    if (e) events.push(e);
  }
  return events;
}

/**
 * How the server refuses a query when it has seen no poller on the run's task queue for a while ("worker may be
 * down"), instead of letting it wait out its deadline: the same cause, told sooner.
 */
const FAILED_PRECONDITION = 9;

function grpcCodeOf(err: unknown): number | undefined {
  for (let e = err; e instanceof Error; e = e.cause) if (isGrpcServiceError(e)) return e.code;
  return undefined;
}

function innermostMessage(err: unknown): string {
  let e = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message.replace(/^\d+ [A-Z_]+: /, '') : String(e);
}
