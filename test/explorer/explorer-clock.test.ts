// The time-skipping test server holds its clock while a workflow has a task outstanding and releases it when the task
// completes. A terminate in between drops that completion, and the clock stays held: every later sleep on that server
// waits in real time, which the explorer saw as a seed that "hung" at its first step, after another seed's terminate on
// the same lane. The lane's terminate waits for the task first (explore/lane.ts); this holds both halves against a
// real test server: the raw terminate does leak (so the wait is needed), and the lane's does not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EsignActivities } from '../../activities/index.js';
import { createExplorerActivities } from '../../explore/activities.js';
import { transactionInput } from '../../explore/input.js';
import { bundleWorkflows, Lane } from '../../explore/lane.js';
import { ProviderModel } from '../../explore/provider-model.js';
import { generateSchedule } from '../../explore/schedule.js';
import { startEsignTransaction } from '../../src/client/transactions.js';

let lane: Lane;
beforeAll(async () => {
  lane = await Lane.start(await bundleWorkflows(), 'clock-test');
}, 120_000);
afterAll(async () => {
  await lane?.close();
});

/** Activities of run `run` that each wait at a gate the test opens; `entered` resolves when the first one starts. */
function gatedActivities(run: number) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const started = new Promise<void>((resolve) => (entered = resolve));
  let n = 0;
  const real = createExplorerActivities({
    model: new ProviderModel({ uuid: () => `0000000${run}-0000-4000-8000-${String(++n).padStart(12, '0')}` }),
  });
  const gated = Object.fromEntries(
    Object.entries(real).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        entered();
        await gate;
        return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    ]),
  ) as unknown as EsignActivities;
  lane.register(run, gated);
  return { open, started };
}

async function startOne(run: number): Promise<string> {
  const schedule = generateSchedule(1, { maxHistoryEvents: false, badZips: false });
  const referenceId = `x1-${run}`;
  const input = transactionInput(schedule, referenceId, ['11111111-1111-4111-8111-111111111111']);
  await startEsignTransaction(lane.client, input, { taskQueue: lane.taskQueue });
  return `esign-${referenceId}`;
}

describe('explorer lanes and the test server clock', () => {
  it('a terminate in the middle of an activity leaves the clock held; the lane waits the task out and leaves it free', async () => {
    expect(await lane.clockFree()).toBe(true);

    // The lane's terminate: it waits for the activity, which the gate lets finish a moment later.
    const waited = gatedActivities(1);
    const first = await startOne(1);
    await waited.started;
    setTimeout(waited.open, 500);
    expect(await lane.terminate(first, 'test')).toBe(true);
    expect(lane.clockLeaked).toBe(false);
    expect(await lane.clockFree()).toBe(true);

    // A terminate that cannot wait (the activity never ends) is done anyway, and the lane says its clock leaked.
    const stuck = gatedActivities(2);
    const second = await startOne(2);
    await stuck.started;
    expect(await lane.terminate(second, 'test', 300)).toBe(true);
    expect(lane.clockLeaked).toBe(true);
    // The test server's own behaviour, which is why: the dropped completion's lock is never given back.
    stuck.open();
    expect(await lane.clockFree(2_000)).toBe(false);
    await lane.forget(1);
    await lane.forget(2);
  }, 120_000);
});
