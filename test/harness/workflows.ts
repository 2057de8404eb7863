// A minimal workflow that proves the test harness: one activity, one signal.
import { condition, defineSignal, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import { Clock } from '../../workflows/clock.js';
import type { createHarnessActivities } from './activities.js';

const { greet } = proxyActivities<ReturnType<typeof createHarnessActivities>>({
  startToCloseTimeout: '10 seconds',
});

export const proceed = defineSignal<[string]>('proceed');

export async function harnessWorkflow(name: string): Promise<string> {
  let suffix: string | undefined;
  setHandler(proceed, (value) => {
    suffix = value;
  });
  const greeting = await greet(name);
  await condition(() => suffix !== undefined);
  return `${greeting}${suffix}`;
}

/** Sleeps for days: only the time-skipping test server can run this in a test. */
export async function longTimerWorkflow(days: number): Promise<number> {
  const clock = new Clock();
  const started = clock.now();
  await sleep(`${days} days`);
  return clock.now() - started;
}
