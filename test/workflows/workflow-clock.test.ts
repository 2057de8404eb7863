// Defect 6 of issue 23: the transaction workflow compared the clock with its
// deadline and reminders right after local activities. When a local activity
// outlives its workflow task (a slow provider, retries: the worker heartbeats
// the task), the first execution sees the time it resolved, a replay does
// not: a decision on that time recorded a command the replay does not make.
// workflows/clock.ts returns the time read before the local activity, so both agree.
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { clockAcrossLocalActivity } from '../clock/workflows.js';
import { connectToTestServer, type TemporalTestContext, uniqueTaskQueue } from '../support/temporal.js';

const workflowsPath = fileURLToPath(new URL('../clock/workflows.ts', import.meta.url));
const activities = { pause: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
let temporal: TemporalTestContext;
beforeAll(async () => {
  temporal = await connectToTestServer();
});
afterAll(async () => {
  await temporal?.close();
});

async function runAndReplay(branchOnRaw: boolean) {
  const taskQueue = uniqueTaskQueue('clock');
  const worker = await Worker.create({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    workflowsPath,
    activities,
  });
  const handle = await worker.runUntil(async () => {
    const h = await temporal.client.workflow.start<typeof clockAcrossLocalActivity>('clockAcrossLocalActivity', {
      taskQueue,
      workflowId: `clock-${taskQueue}`,
      args: [3_000, branchOnRaw],
      workflowTaskTimeout: '2 seconds',
    });
    await h.result();
    return h;
  });
  const result = await handle.result();
  const replay = await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), handle.workflowId).then(
    () => 'replayed',
    (err: Error) => err.name,
  );
  return { ...result, replay };
}

it('the clock after a local activity is the time before it, so a decision on it replays', async () => {
  const safe = await runAndReplay(false);
  expect(safe.after).toBe(safe.before);
  expect(safe.timers).toBe(0);
  expect(safe.replay).toBe('replayed');
});

it('the raw clock after a local activity has moved on in the first execution only: a decision on it does not replay', async () => {
  const raw = await runAndReplay(true);
  expect(raw.raw - raw.before).toBeGreaterThanOrEqual(3_000);
  expect(raw.timers).toBe(1);
  expect(raw.replay).toBe('DeterminismViolationError');
});
