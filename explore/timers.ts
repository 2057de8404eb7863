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

/** Whether the history ends in a workflow task that is scheduled or running. */
export function taskInFlight(history: History): boolean {
  const last = history?.events?.at(-1)?.eventType;
  return last === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED || last === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED;
}

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

function millis(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}
