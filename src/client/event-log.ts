/**
 * Reading a transaction's event log and sending its events again (src/definitions/event-log.ts,
 * docs/integrator-events.md): the log is a workflow of its own, open while it delivers and for its retention after
 * the transaction ended, closed with its last view as its result after that. A log that ended otherwise (terminated
 * by an operator, failed, timed out) has no result; its last state is its query, which a worker of its task queue
 * answers from its history (src/client/event-log-recovery.ts). A redelivery to a closed log, or the transaction's
 * next event, starts it again from that state, so its numbering goes on and what an integrator missed can be sent
 * again for as long as Temporal keeps the closed run.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { describeIfExists } from './describe.js';
import { PayloadErased } from '../codec/data-keys.js';
import { readClosedEventLog, type ReadClosedOptions } from './event-log-recovery.js';
import {
  EVENT_LOG_WORKFLOW_TYPE,
  eventLogIdFor,
  eventLogQuery,
  redeliverEventsUpdate,
  type EventLogInput,
  type EventLogView,
  type RedeliverRequest,
} from '../definitions/event-log.js';

export { EventLogUnreadable } from './event-log-recovery.js';

/** The transaction sent no event (it has no `callbackUrl`, or has not sent one yet), or its log is gone. */
export class NoEventLog extends Error {
  override readonly name = 'NoEventLog';
  constructor(readonly referenceId: string) {
    super(`transaction ${referenceId} has no event log: it has no callbackUrl, has sent no event yet, or its log is past retention`);
  }
}

/**
 * The events of a transaction after sequence number `after` (all by default), each with its delivery attempts: from
 * the running log, or the last state of a closed one (`EventLogUnreadable` if that cannot be read: no worker of its
 * task queue answers, or its history cannot be decoded).
 */
export async function listEsignEvents(client: Client, referenceId: string, options: { after?: number } = {}): Promise<EventLogView> {
  const handle = client.workflow.getHandle(eventLogIdFor(referenceId));
  const after = options.after ?? 0;
  try {
    const { status, runId, taskQueue } = await handle.describe();
    if (status.name === 'RUNNING') return await handle.query(eventLogQuery, { after });
    const {
      callbackUrl: _secret,
      retention: _retention,
      ...last
    } = await readClosedEventLog(client, referenceId, {
      workflowId: handle.workflowId,
      runId,
      status: status.name,
      taskQueue,
    });
    return { ...last, events: last.events.filter((e) => e.sequence > after) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new NoEventLog(referenceId);
    throw err;
  }
}

/**
 * Where a transaction's log stands: running (and on which task queue), or closed with the input its next run starts
 * from (its last state: the events, the endpoint's health, whether the transaction ended), however it ended, or
 * neither (it never ran, or is past the namespace's retention). A redelivery and the transaction's next event both
 * start a closed log again. A closed log whose state cannot be read throws `EventLogUnreadable` rather than answer
 * "no log", which would start a fresh one numbered from 1.
 */
export async function eventLogState(
  client: Client,
  referenceId: string,
  options: ReadClosedOptions = {},
): Promise<{ running: boolean; taskQueue?: string; restart?: EventLogInput }> {
  const workflowId = eventLogIdFor(referenceId);
  const described = await describeIfExists(client, workflowId);
  if (!described) return { running: false };
  if (described.status.name === 'RUNNING') return { running: true, taskQueue: described.taskQueue };
  const last = await readClosedEventLog(
    client,
    referenceId,
    { workflowId, runId: described.runId, status: described.status.name, taskQueue: described.taskQueue },
    options,
  ).catch((err: unknown) => {
    // Gone between the describe and the read (past the namespace's retention), or erased: as if it never ran, so
    // an erased referenceId used again numbers its events from 1 (docs/records.md, "Erasure").
    if (err instanceof WorkflowNotFoundError || err instanceof PayloadErased) return undefined;
    throw err;
  });
  if (!last) return { running: false };
  const restart: EventLogInput = {
    referenceId,
    callbackUrl: last.callbackUrl,
    events: last.events,
    ended: last.ended,
    health: last.health,
    ...(last.retention !== undefined ? { retention: last.retention } : {}),
  };
  return { running: false, taskQueue: described.taskQueue, restart };
}

/**
 * Sends events of a transaction again with their own `webhook-id`s, in order: every one after `after`, or the one
 * `eventId` names. Answers how many were queued; they go out after any still pending.
 */
export async function redeliverEsignEvents(
  client: Client,
  referenceId: string,
  request: RedeliverRequest,
  options: { taskQueue?: string } = {},
): Promise<{ queued: number; sequences: number[] }> {
  const workflowId = eventLogIdFor(referenceId);
  let state = await eventLogState(client, referenceId);
  if (state.running) {
    try {
      return await client.workflow.getHandle(workflowId).executeUpdate(redeliverEventsUpdate, { args: [request] });
    } catch (err) {
      // It closed between the look and the update: it is restarted below, like any closed log.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      state = await eventLogState(client, referenceId);
    }
  }
  if (!state.restart) throw new NoEventLog(referenceId);
  // Closed (after its retention, or terminated): a new run of the same log, from its last state, takes the redelivery.
  const start = new WithStartWorkflowOperation(EVENT_LOG_WORKFLOW_TYPE, {
    workflowId,
    taskQueue: options.taskQueue ?? state.taskQueue!,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [state.restart],
  });
  return client.workflow.executeUpdateWithStart(redeliverEventsUpdate, { args: [request], startWorkflowOperation: start });
}
