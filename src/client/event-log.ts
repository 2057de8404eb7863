/**
 * Reading a transaction's event log and sending its events again (src/definitions/event-log.ts,
 * docs/integrator-events.md): the log is a workflow of its own, open while it delivers and for its retention after
 * the transaction ended, closed with its last view as its result after that. A redelivery to a closed log starts it
 * again from that view, so what an integrator missed can be sent again for as long as Temporal keeps the result.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  EVENT_LOG_WORKFLOW_TYPE,
  eventLogIdFor,
  eventLogQuery,
  redeliverEventsUpdate,
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
  const handle = client.workflow.getHandle(workflowId);
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new NoEventLog(referenceId);
    throw err;
  }
  if (description.status.name === 'RUNNING') {
    try {
      return await handle.executeUpdate(redeliverEventsUpdate, { args: [request] });
    } catch (err) {
      // It closed between the look and the update: it is restarted below, like any closed log.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  // Closed after its retention: a new run of the same log, from its last view, takes the redelivery.
  const last = (await handle.result()) as EventLogResult;
  const { callbackUrl } = last;
  const start = new WithStartWorkflowOperation(EVENT_LOG_WORKFLOW_TYPE, {
    workflowId,
    taskQueue: options.taskQueue ?? description.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ referenceId, callbackUrl, events: last.events, ended: last.ended, health: last.health }],
  });
  return client.workflow.executeUpdateWithStart(redeliverEventsUpdate, { args: [request], startWorkflowOperation: start });
}
