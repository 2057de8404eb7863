// The explorer's model of a real server's hints must show the worker exactly what the replay check later meets:
// a task the worker saw without a flag must replay without it. The pass-through is driven here with a stand-in
// upstream so the order (a poll begun with hints off, answered once a hinted schedule has begun) is fixed.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import proto from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Observation } from '../../explore/observation.js';
import { checkOperations } from '../../explore/operation-checks.js';
import { POLL_WORKFLOW_TASK_PATH, ServerHints } from '../../explore/server-hints.js';
import { StickyQueueSpy } from '../../explore/sticky-queues.js';

const { PollWorkflowTaskQueueRequest, PollWorkflowTaskQueueResponse } = proto.temporal.api.workflowservice.v1;
const { EventType } = proto.temporal.api.enums.v1;
const RUN = 'run-1';

const frame = (message: Uint8Array): Buffer => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  Buffer.from(message).copy(out, 5);
  return out;
};

type EventId = NonNullable<proto.temporal.api.history.v1.IHistoryEvent['eventId']>;
/** protobufjs takes a plain number for an int64 field; its types ask for a Long. */
const id = (n: number) => n as unknown as EventId;

function task(): proto.temporal.api.workflowservice.v1.IPollWorkflowTaskQueueResponse {
  return {
    taskToken: Buffer.from('token'),
    workflowExecution: { workflowId: 'wf', runId: RUN },
    history: {
      events: [
        { eventId: id(1), eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, workflowExecutionStartedEventAttributes: {} },
        { eventId: id(2), eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, workflowTaskScheduledEventAttributes: {} },
        { eventId: id(3), eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, workflowTaskStartedEventAttributes: {} },
      ],
    },
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('explorer server hints', () => {
  it('a poll begun with hints off and answered in a hinted schedule shows the worker what the replay meets', async () => {
    let answer: (() => void) | undefined;
    const upstream = http2.createServer();
    upstream.on('stream', (stream) => {
      stream.on('data', () => {});
      stream.on('end', () => {
        answer = () => {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          stream.end(frame(PollWorkflowTaskQueueResponse.encode(task()).finish()));
        };
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => upstream.close(() => resolve())));
    const hints = new ServerHints();
    hints.reset(false);
    const spy = await StickyQueueSpy.start(`127.0.0.1:${(upstream.address() as AddressInfo).port}`, hints);
    closers.unshift(() => spy.close());

    const worker = http2.connect(`http://${spy.address}`);
    closers.unshift(async () => void worker.close());
    const call = worker.request({ ':method': 'POST', ':path': POLL_WORKFLOW_TASK_PATH, 'content-type': 'application/grpc' });
    const received: Buffer[] = [];
    call.on('data', (chunk: Buffer) => received.push(chunk));
    const ended = new Promise<void>((resolve) => call.on('end', () => resolve()));
    call.end(frame(PollWorkflowTaskQueueRequest.encode({ taskQueue: { name: 'q' } }).finish()));
    await expect.poll(() => answer).toBeDefined();

    // A hinted schedule begins and the server says the run's target changed, before the long poll is answered.
    hints.reset(true);
    const hint = hints.give('targetVersionChanged', 'wf', RUN);
    answer!();
    await ended;

    const shown = PollWorkflowTaskQueueResponse.decode(Buffer.concat(received).subarray(5));
    const replayed = task();
    hints.patchHistory(RUN, replayed.history);
    const flag = (h: proto.temporal.api.history.v1.IHistory | null | undefined) =>
      h?.events?.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)?.workflowTaskStartedEventAttributes
        ?.targetWorkerDeploymentVersionChanged ?? false;
    expect(hint.fromEventId).toBeLessThanOrEqual(3);
    expect(flag(shown.history)).toBe(flag(replayed.history));
    expect(flag(shown.history)).toBe(true);
  });
});

describe('explorer versioning check', () => {
  const at = (s: number) => ({ seconds: s, nanos: 0 });
  const observation = (continuedInTask: number, fromEventId: number) =>
    ({
      startedAt: 0,
      histories: [
        {
          runId: RUN,
          history: {
            events: [
              ...(task().history?.events ?? []).map((e) => ({ ...e, eventTime: at(1) })),
              { eventId: id(4), eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, eventTime: at(2) },
              { eventId: id(5), eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, eventTime: at(2) },
            ].filter((e) => Number(e.eventId) <= continuedInTask + 2),
          },
        },
      ],
      operations: {
        upkeeps: [],
        hints: [{ kind: 'targetVersionChanged', workflowId: 'wf', runId: RUN, fromEventId, at: 1000, maxPollMs: 3_600_000 }],
        continuedAs: { [RUN]: 0 },
      },
    }) as unknown as Observation;

  it('a run that continued as new in the task it was in when the hint came is not held to the new version', () => {
    const found: string[] = [];
    checkOperations(observation(3, 4), (_check, detail) => found.push(detail));
    expect(found).toEqual([]);
  });

  it('a run shown the flag that continued as new on its own version is a finding', () => {
    const found: string[] = [];
    checkOperations(observation(3, 3), (_check, detail) => found.push(detail));
    expect(found).toEqual([expect.stringContaining('not to the target version (AUTO_UPGRADE)')]);
  });
});
