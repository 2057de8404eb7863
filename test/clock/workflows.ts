// A workflow that reads the time on both sides of a slow local activity, the
// way the transaction workflow did before defect 6 was fixed, and through
// workflows/clock.ts, and branches on each (test/workflows/workflow-clock.test.ts).
import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import { Clock } from '../../workflows/clock.js';

const { pause } = proxyLocalActivities<{ pause(ms: number): Promise<void> }>({ startToCloseTimeout: '1 minute' });

export async function clockAcrossLocalActivity(
  ms: number,
  branchOnRaw: boolean,
): Promise<{ before: number; after: number; raw: number; timers: number }> {
  const clock = new Clock();
  const before = clock.now();
  await pause(ms);
  clock.localActivityResolved();
  const after = clock.now();
  // eslint-disable-next-line no-restricted-syntax -- the unsafe read this test contrasts with the clock's
  const raw = Date.now();
  // A decision on the time: a timer only when a second has passed, as a deadline check would.
  let timers = 0;
  if ((branchOnRaw ? raw : after) - before >= ms) {
    await sleep(1);
    timers++;
  }
  return { before, after, raw, timers };
}
