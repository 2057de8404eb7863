/** What a workflow's history says of its workflow task and its timers (the driver's `settle` reads it). */
import proto from '@temporalio/proto';

type History = proto.temporal.api.history.v1.IHistory | undefined;
const { EventType } = proto.temporal.api.enums.v1;

const CLOSED = new Set([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

/**
 * Whether a workflow task is scheduled or running: one scheduled and not yet completed, failed or timed out. Events
 * may follow it (a signal that arrived while it ran), so the last event alone does not say. (The test server leaves
 * `pendingWorkflowTask` out of its describe answer: the history is the only place to read it.)
 */
export function taskInFlight(history: History): boolean {
  let open = false;
  for (const e of history?.events ?? []) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) open = true;
    else if (WORKFLOW_TASK_ENDS.has(e.eventType!) || CLOSED.has(e.eventType!)) open = false;
  }
  return open;
}

/** The activity ids of the activities scheduled and not yet completed, failed, timed out or cancelled. */
export function openActivities(history: History): string[] {
  const open = new Map<string, string>();
  for (const e of history?.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) open.set(String(e.eventId), scheduled.activityId ?? '');
    const ended =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (ended) open.delete(String(ended.scheduledEventId));
  }
  return [...open.values()];
}

const WORKFLOW_TASK_ENDS = new Set([
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
]);

/** When each timer an open run has started, and neither fired nor cancelled, is due (epoch ms). */
export function pendingTimerDeadlines(history: History): number[] {
  const events = history?.events ?? [];
  const last = events.at(-1)?.eventType;
  if (last === undefined || last === null || CLOSED.has(last)) return [];
  const due = new Map<string, number>();
  for (const e of events) {
    const started = e.timerStartedEventAttributes;
    if (started?.timerId) {
      due.set(started.timerId, millis(e.eventTime) + millis(started.startToFireTimeout));
      continue;
    }
    const ended = e.timerFiredEventAttributes?.timerId ?? e.timerCanceledEventAttributes?.timerId;
    if (ended) due.delete(ended);
  }
  return [...due.values()];
}

/** A protobuf timestamp or duration in milliseconds (0 when absent). */
export function millis(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}
