// The transaction workflow's branches, fast: the time-skipping server, and the explorer's stub
// activities over its provider model (explore/activities.ts, explore/provider-model.ts) instead of
// the provider sandbox. Each test is a short schedule of the explorer's (explore/schedule.ts): what
// reaches the workflow and when, and what the provider's people do; the run is then held to the
// explorer's checks (it ended, its outcome is the provider's, archived once, every history replays)
// and to what the branch is about. Modelled on the money-transfer template's mocked-activity tests.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Observation } from '../../explore/observation.js';
import { Explorer } from '../../explore/explore.js';
import type { Delivery, Schedule, ScheduleSetup, TimedStep } from '../../explore/schedule.js';
import type { EsignTransactionStatus } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let explorer: Explorer;
beforeAll(async () => {
  explorer = await Explorer.start({ lanes: 1 });
});
afterAll(async () => {
  await explorer?.close();
});

/** Through the bridge, at once: the webhook path of a healthy provider. */
const bridge: Delivery = [{ via: 'bridge', afterMs: 0 }];
/** Never arrives: the workflow learns of the move some other way. */
const lost: Delivery = [];

const setup = (overrides: Partial<ScheduleSetup> = {}): ScheduleSetup => ({
  participants: 2,
  status: 'esign_pending',
  signingDeadlineMs: 24 * HOUR,
  reconcileIntervalMs: HOUR,
  reconcileMaxIntervalMs: HOUR,
  callback: false,
  signingUrlWithStart: false,
  ...overrides,
});

let seed = 0;
async function run(schedule: Omit<Schedule, 'seed' | 'faults' | 'late'> & Partial<Schedule>): Promise<Observation> {
  const { observation, findings } = await explorer.run({ seed: ++seed, faults: [], late: [], ...schedule });
  // Whatever the branch, the explorer's invariants hold.
  expect(findings).toEqual([]);
  return observation;
}

const message = (o: Observation, step: string) => o.messages.find((m) => m.step === step);
const phaseAt = (o: Observation, step: string) => (message(o, step)?.value as EsignTransactionStatus | undefined)?.phase;
const result = (o: Observation) => (o.end.kind === 'result' ? o.end.result : undefined);

it('a cancel the provider refuses (someone signed) fails with WithdrawRefused; the workflow follows the transaction to completion', async () => {
  const steps: TimedStep[] = [
    { at: 10 * MINUTE, kind: 'sign', participant: 0, webhooks: [bridge] },
    { at: 20 * MINUTE, kind: 'cancel' },
    { at: 30 * MINUTE, kind: 'query' },
    { at: 2 * HOUR, kind: 'sign', participant: 1, webhooks: [bridge, bridge] },
  ];
  const o = await run({ setup: setup(), steps });
  expect(message(o, 'cancel@+1200s')).toMatchObject({ outcome: 'failed', type: FailureType.WithdrawRefused });
  expect(message(o, 'cancel@+1200s')?.message).toContain('1 of 2');
  expect(phaseAt(o, 'query@+1800s')).toBe('awaiting_signatures');
  expect(result(o)).toMatchObject({ status: 'completed', archive: { sha256: expect.any(String) as string } });
  expect(o.model.archives).toHaveLength(1);
});

it('past the deadline with a signature, the refused withdraw leaves the transaction overdue until it completes', async () => {
  const steps: TimedStep[] = [
    { at: 10 * MINUTE, kind: 'sign', participant: 0, webhooks: [bridge] },
    { at: HOUR + 10 * MINUTE, kind: 'query' },
    { at: HOUR + 20 * MINUTE, kind: 'sign', participant: 1, webhooks: [bridge, bridge] },
  ];
  const o = await run({
    setup: setup({ signingDeadlineMs: HOUR, reconcileIntervalMs: 15 * MINUTE, reconcileMaxIntervalMs: 15 * MINUTE }),
    steps,
  });
  expect(phaseAt(o, 'query@+4200s')).toBe('overdue');
  expect(result(o)).toMatchObject({ status: 'completed' });
  expect(o.model.transactions.get(result(o)!.transactionId!)?.trail.map((t) => t.status)).toEqual(['esign_pending', 'completed']);
});

it('a completion the workflow has not heard of when it withdraws: the cancel fails with TransactionFinished and the documents are archived', async () => {
  // The provider completes the transaction a second before the cancel; its webhooks are lost and no poll is due,
  // so the workflow learns of the completion from the withdraw's refusal. (Both at the same instant would race
  // the withdraw against the signature: either ending is right, and the explorer's seeds cover that race.)
  const steps: TimedStep[] = [
    { at: 10 * MINUTE, kind: 'sign', participant: 0, webhooks: [lost, lost] },
    { at: 10 * MINUTE + 1_000, kind: 'cancel' },
  ];
  const o = await run({ setup: setup({ participants: 1 }), steps });
  expect(message(o, 'cancel@+601s')).toMatchObject({ outcome: 'failed', type: FailureType.TransactionFinished });
  expect(result(o)).toMatchObject({ status: 'completed' });
  expect(o.model.archives).toEqual([expect.objectContaining({ transactionId: result(o)!.transactionId })]);
});

it('reminds those still to sign at the planned times, with a fresh signing URL, and stops once they signed', async () => {
  const steps: TimedStep[] = [
    { at: 2 * HOUR, kind: 'sign', participant: 0, webhooks: [bridge] },
    { at: 6 * HOUR, kind: 'sign', participant: 1, webhooks: [bridge, bridge] },
  ];
  const o = await run({
    setup: setup({
      signingDeadlineMs: 10 * HOUR,
      reconcileIntervalMs: 12 * HOUR,
      reconcileMaxIntervalMs: 12 * HOUR,
      callback: true,
      reminders: { firstAfterMs: HOUR, everyMs: 2 * HOUR, maxCount: 5 },
    }),
    steps,
  });
  const reminders = o.model.events
    .filter((e) => e.type === 'reminder.due')
    .map((e) => ({
      reminder: e.data.reminder,
      who: (e.data.participant as { name: string }).name,
      afterHours: Math.round((Date.parse(e.occurredAt!) - o.startedAt) / HOUR),
      url: typeof e.data.signingUrl === 'string',
    }))
    .sort((a, b) => Number(a.reminder) - Number(b.reminder) || a.who.localeCompare(b.who));
  // Hour 1: both; hours 3 and 5: only Alan (Ada signed at hour 2); none after Alan signed at hour 6.
  expect(reminders).toEqual([
    { reminder: 1, who: 'Ada Lovelace', afterHours: 1, url: true },
    { reminder: 1, who: 'Alan Turing', afterHours: 1, url: true },
    { reminder: 2, who: 'Alan Turing', afterHours: 3, url: true },
    { reminder: 3, who: 'Alan Turing', afterHours: 5, url: true },
  ]);
  expect(result(o)).toMatchObject({ status: 'completed' });
});
