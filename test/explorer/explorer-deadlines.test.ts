// Where the explorer reads a transaction's deadline as its corrections left it (explore/deadlines.ts): the deadline
// check from the histories (what the workflow applied, in its order), the drive to the end from the answers, where a
// correction whose answer was lost must count as maybe in force.
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { expect, it } from 'vitest';
import { answeredDeadline, appliedDeadline } from '../../explore/deadlines.js';
import type { MessageOutcome, RecordedHistory } from '../../explore/observation.js';

const { EventType } = proto.temporal.api.enums.v1;
const at = (iso: string) => Date.parse(iso);

const correction = (outcome: MessageOutcome['outcome'], asked: string, answeredTo?: string, part?: number): MessageOutcome => ({
  step: `correct deadline to ${asked}`,
  kind: 'correct',
  asked: 'deadline',
  deadline: asked,
  outcome,
  ...(answeredTo ? { value: { deadline: { from: '2026-01-01T00:00:00.000Z', to: answeredTo } } } : {}),
  ...(part !== undefined ? { part } : {}),
});

it('drives to the deadline the last answer gave, not the one asked for', () => {
  const moved = answeredDeadline(
    [
      correction('ok', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
      correction('ok', '2026-01-05T00:00:00.000Z', '2026-01-04T00:00:00.000Z'),
    ],
    0,
  );
  expect(moved).toEqual({ answered: at('2026-01-04T00:00:00.000Z'), uncertain: [] });
});

it('counts a correction whose answer never came as maybe in force, until a later answer settles it', () => {
  const lost = correction('error', '2026-01-03T00:00:00.000Z');
  const pending = correction('pending', '2026-01-06T00:00:00.000Z');
  expect(answeredDeadline([correction('ok', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'), lost, pending], 0)).toEqual({
    answered: at('2026-01-02T00:00:00.000Z'),
    uncertain: [at('2026-01-03T00:00:00.000Z'), at('2026-01-06T00:00:00.000Z')],
  });
  expect(answeredDeadline([lost, correction('ok', '2026-01-07T00:00:00.000Z', '2026-01-07T00:00:00.000Z')], 0)).toEqual({
    answered: at('2026-01-07T00:00:00.000Z'),
    uncertain: [],
  });
});

it('drives past no refused correction, other correction or other transaction', () => {
  const other: MessageOutcome = { step: 'correct contact', kind: 'correct', asked: 'contact', outcome: 'error' };
  const moved = answeredDeadline(
    [correction('failed', '2026-01-03T00:00:00.000Z'), other, correction('ok', '2026-01-09T00:00:00.000Z', '2026-01-09T00:00:00.000Z', 1)],
    0,
  );
  expect(moved).toEqual({ uncertain: [] });
});

// A run's history as the server records updates: accepted (with the update's name), then completed with its answer.
const accepted = (updateId: string, name: string): proto.temporal.api.history.v1.IHistoryEvent => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
  workflowExecutionUpdateAcceptedEventAttributes: { acceptedRequest: { meta: { updateId }, input: { name } } },
});
const completed = (updateId: string, answer?: unknown): proto.temporal.api.history.v1.IHistoryEvent => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
  workflowExecutionUpdateCompletedEventAttributes: {
    meta: { updateId },
    outcome:
      answer === undefined ? { failure: { message: 'refused' } } : { success: { payloads: [defaultPayloadConverter.toPayload(answer)] } },
  },
});
const run = (...events: proto.temporal.api.history.v1.IHistoryEvent[]) => ({ history: { events } }) as unknown as RecordedHistory;
const moved = (to: string) => ({ kind: 'deadline', deadline: { from: '2026-01-01T00:00:00.000Z', to } });

const started = (carried?: unknown): proto.temporal.api.history.v1.IHistoryEvent => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
  workflowExecutionStartedEventAttributes: {
    input: { payloads: [defaultPayloadConverter.toPayload({}), ...(carried ? [defaultPayloadConverter.toPayload(carried)] : [])] },
  },
});
const audit = (to: string) => ({
  kind: 'deadline',
  by: 'ops',
  at: '2026-01-01T00:00:00.000Z',
  deadline: { from: '2026-01-01T00:00:00.000Z', to },
});

it('checks against the deadline the workflow last applied, in the order it applied them', () => {
  const chain = [
    run(
      started(),
      accepted('a', 'correctTransaction'),
      accepted('b', 'correctTransaction'),
      completed('b', moved('2026-01-03T00:00:00.000Z')),
      // Accepted first, applied last: its deadline is the one in force.
      completed('a', moved('2026-01-02T00:00:00.000Z')),
      accepted('c', 'correctTransaction'),
      completed('c'),
    ),
  ];
  expect(appliedDeadline(chain)).toBe(at('2026-01-02T00:00:00.000Z'));
});

it('checks a continued run against the audit it was handed, then its own corrections', () => {
  // The correction applied in the task that continued the run left no update events (a completion the test server
  // refused): the next run's input still carries it.
  const handedOver = [
    run(started()),
    run(started({ corrections: [audit('2026-01-04T00:00:00.000Z'), { kind: 'resend', by: 'ops', at: 'x' }] })),
  ];
  expect(appliedDeadline(handedOver)).toBe(at('2026-01-04T00:00:00.000Z'));
  const correctedAgain = [
    ...handedOver,
    run(
      started({ corrections: [audit('2026-01-04T00:00:00.000Z')] }),
      accepted('d', 'correctTransaction'),
      completed('d', moved('2026-01-06T00:00:00.000Z')),
    ),
  ];
  expect(appliedDeadline(correctedAgain)).toBe(at('2026-01-06T00:00:00.000Z'));
});

it('checks against the input deadline when no correction moved it (refused, or another update)', () => {
  const chain = [
    run(accepted('a', 'correctTransaction'), completed('a'), accepted('b', 'approve'), completed('b', moved('2026-01-05T00:00:00.000Z'))),
  ];
  expect(appliedDeadline(chain)).toBeUndefined();
});
