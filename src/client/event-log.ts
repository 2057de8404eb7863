/**
 * Reading a transaction's event log and sending its events again (src/definitions/event-log.ts,
 * docs/integrator-events.md): the log is a workflow of its own, open while it delivers and for its retention after
 * the transaction ended, closed with its last view as its result after that. A redelivery to a closed log starts it
 * again from that view, so what an integrator missed can be sent again for as long as Temporal keeps the result.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { describeIfExists } from './describe.js';
import {
  EVENT_LOG_WORKFLOW_TYPE,
  eventLogIdFor,
  eventLogQuery,
  redeliverEventsUpdate,
  type EventLogInput,
  type EventLogResult,
  type EventLogView,
  type RedeliverRequest,
} from '../definitions/event-log.js';

/** The transaction sent no event (it has no `callbackUrl`, or has not sent one yet), or its log is gone. */
export class NoEventLog extends Error {
  override readonly name = 'NoEventLog';
  constructor(readonly referenceId: string) {
    super(`transaction ${referenceId} has no event log: it has no callbackUrl, has sent no event yet, or its log is past retention`);
  }
}

/** The events of a transaction after sequence number `after` (all by default), each with its delivery attempts. */
export async function listEsignEvents(client: Client, referenceId: string, options: { after?: number } = {}): Promise<EventLogView> {
  const handle = client.workflow.getHandle(eventLogIdFor(referenceId));
  try {
    const { status } = await handle.describe();
    if (status.name === 'RUNNING') return await handle.query(eventLogQuery, { after: options.after ?? 0 });
    const { callbackUrl: _secret, ...last } = (await handle.result()) as EventLogResult;
    return { ...last, events: last.events.filter((e) => e.sequence > (options.after ?? 0)) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new NoEventLog(referenceId);
    throw err;
  }
}

/**
 * Where a transaction's log stands: running (and on which task queue), or closed with the input its next run starts
 * from (its last view: the events, the endpoint's health, whether the transaction ended), or neither (it never ran,
 * or ended without a view: terminated). A redelivery and a late completion's event both start a closed log again.
 */
export async function eventLogState(
  client: Client,
  referenceId: string,
): Promise<{ running: boolean; taskQueue?: string; restart?: EventLogInput }> {
  const handle = client.workflow.getHandle(eventLogIdFor(referenceId));
  const described = await describeIfExists(client, handle.workflowId);
  if (!described) return { running: false };
  if (described.status.name === 'RUNNING') return { running: true, taskQueue: described.taskQueue };
  const last = (await handle.result().catch(() => undefined)) as EventLogResult | undefined;
  if (!last) return { running: false, taskQueue: described.taskQueue };
  const restart: EventLogInput = {
    referenceId,
    callbackUrl: last.callbackUrl,
    events: last.events,
    ended: last.ended,
    health: last.health,
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
  // Closed after its retention: a new run of the same log, from its last view, takes the redelivery.
  const start = new WithStartWorkflowOperation(EVENT_LOG_WORKFLOW_TYPE, {
    workflowId,
    taskQueue: options.taskQueue ?? state.taskQueue!,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [state.restart],
  });
  return client.workflow.executeUpdateWithStart(redeliverEventsUpdate, { args: [request], startWorkflowOperation: start });
}
