// Where the explorer reads a transaction's deadline as its corrections left it (explore/deadlines.ts): the deadline
// check and the drive to the end both follow it, so a correction whose answer was lost must count as maybe in force.
import { expect, it } from 'vitest';
import { correctedDeadline } from '../../explore/deadlines.js';
import type { MessageOutcome } from '../../explore/observation.js';

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

it('takes the deadline the last answer gave, not the one asked for', () => {
  const moved = correctedDeadline(
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
  expect(correctedDeadline([correction('ok', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'), lost, pending], 0)).toEqual({
    answered: at('2026-01-02T00:00:00.000Z'),
    uncertain: [at('2026-01-03T00:00:00.000Z'), at('2026-01-06T00:00:00.000Z')],
  });
  expect(correctedDeadline([lost, correction('ok', '2026-01-07T00:00:00.000Z', '2026-01-07T00:00:00.000Z')], 0)).toEqual({
    answered: at('2026-01-07T00:00:00.000Z'),
    uncertain: [],
  });
});

it('ignores refused corrections, other corrections and other transactions', () => {
  const other: MessageOutcome = { step: 'correct contact', kind: 'correct', asked: 'contact', outcome: 'error' };
  const moved = correctedDeadline(
    [correction('failed', '2026-01-03T00:00:00.000Z'), other, correction('ok', '2026-01-09T00:00:00.000Z', '2026-01-09T00:00:00.000Z', 1)],
    0,
  );
  expect(moved).toEqual({ uncertain: [] });
});
