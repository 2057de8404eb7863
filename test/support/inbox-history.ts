import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { inboxIdFor } from '../../src/definitions/inbox.js';

const { EventType } = temporal.api.enums.v1;

/** Events by which an inbox acts on a notification: an activity (a late completion, a lookup) or a signal to its owner. */
const EFFECTS = new Set<number>([
  EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
]);

/**
 * What the transaction's inbox did with the notifications it received: how
 * many it received; whether a workflow task has run since the last one
 * arrived (`handled`: the positive marker a test waits for before it asserts
 * that a notification changed nothing); and what the inbox did after it
 * (`effects`: activities scheduled and signals sent, by event type).
 */
export async function inboxNotifications(
  client: Client,
  transactionId: string,
): Promise<{ received: number; handled: boolean; effects: string[] }> {
  const events = (await client.workflow.getHandle(inboxIdFor(transactionId)).fetchHistory()).events ?? [];
  const type = (e: (typeof events)[number]): number => Number(e.eventType);
  const STARTED: number = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED;
  const COMPLETED: number = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;
  let received = 0;
  let last = -1;
  events.forEach((e, i) => {
    if (e.workflowExecutionSignaledEventAttributes?.signalName === 'inboxNotification') {
      received++;
      last = i;
    }
  });
  // A task started after the signal was recorded had it in its activation; once completed, its commands follow it.
  const started = events.findIndex((e, i) => i > last && type(e) === STARTED);
  const handled = last >= 0 && started >= 0 && events.some((e, i) => i > started && type(e) === COMPLETED);
  const effects = events
    .slice(last + 1)
    .filter((e) => EFFECTS.has(type(e)))
    .map((e) => EventType[type(e)] ?? String(e.eventType));
  return { received, handled, effects };
}
