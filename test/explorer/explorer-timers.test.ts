// What the explorer's driver reads from a history before it moves the test server's clock (explore/timers.ts):
// a timer it misses would fire under a running task and trip the test server's race (sdk-java#2606).
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { pendingTimerDeadlines, taskInFlight } from '../../explore/timers.js';

const { EventType } = proto.temporal.api.enums.v1;
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
const started = (id: string, when: number, forMs: number) => ({
  eventType: EventType.EVENT_TYPE_TIMER_STARTED,
  eventTime: at(when),
  timerStartedEventAttributes: { timerId: id, startToFireTimeout: at(forMs) },
});
// Seconds as plain numbers, as the decoder's Long reads them (Number(seconds)).
const history = (events: object[]) => ({ events }) as unknown as proto.temporal.api.history.v1.IHistory;
const event = (eventType: proto.temporal.api.enums.v1.EventType) => ({ eventType, eventTime: at(0) });

describe('explorer timers', () => {
  it('lists the due time of each timer still pending, and none once the run closed', () => {
    const events = [
      started('1', 1_000, 60_000),
      started('2', 2_000, 1_500),
      { eventType: EventType.EVENT_TYPE_TIMER_FIRED, timerFiredEventAttributes: { timerId: '1' } },
      started('3', 5_000, 250),
      { eventType: EventType.EVENT_TYPE_TIMER_CANCELED, timerCanceledEventAttributes: { timerId: '3' } },
      event(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
    ];
    expect(pendingTimerDeadlines(history(events))).toEqual([3_500]);
    expect(taskInFlight(history(events))).toBe(true);
    const closed = [...events, event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)];
    expect(pendingTimerDeadlines(history(closed))).toEqual([]);
    expect(taskInFlight(history(closed))).toBe(false);
    expect(pendingTimerDeadlines(undefined)).toEqual([]);
  });
});
