import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHarnessActivities } from '../harness/activities.js';
import type { longTimerWorkflow } from '../harness/workflows.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const workflowsPath = fileURLToPath(new URL('../harness/workflows.ts', import.meta.url));

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => {
  await env?.teardown();
});

// Finishing within the test timeout is the proof that time was skipped.
it('runs a timer of several days on the time-skipping test server', async () => {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: 'harness-time-skipping',
    workflowsPath,
    activities: createHarnessActivities({ salutation: 'Hi' }),
  });
  const elapsed = await worker.runUntil(
    env.client.workflow.execute<typeof longTimerWorkflow>('longTimerWorkflow', {
      taskQueue: 'harness-time-skipping',
      workflowId: 'harness-long-timer',
      args: [3],
    }),
  );
  expect(elapsed).toBeGreaterThanOrEqual(3 * 24 * 3600 * 1000);
});
