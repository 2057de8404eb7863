import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarnessActivities } from '../harness/activities.js';
import type { harnessWorkflow } from '../harness/workflows.js';
import { connectToTestServer, type TemporalTestContext, uniqueTaskQueue } from '../support/temporal.js';

const workflowsPath = fileURLToPath(new URL('../harness/workflows.ts', import.meta.url));

describe('Temporal test harness', () => {
  let temporal: TemporalTestContext;
  beforeAll(async () => {
    temporal = await connectToTestServer();
  });
  afterAll(async () => {
    await temporal?.close();
  });

  it('runs a workflow on a real worker and replays its exported JSON history', async () => {
    const taskQueue = uniqueTaskQueue('harness');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      namespace: temporal.namespace,
      taskQueue,
      workflowsPath,
      activities: createHarnessActivities({ salutation: 'Hello' }),
    });
    const workflowId = `harness-${taskQueue}`;
    const result = await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start<typeof harnessWorkflow>('harnessWorkflow', {
        taskQueue,
        workflowId,
        args: ['Ada'],
      });
      await handle.signal('proceed', '!');
      return handle.result();
    });
    expect(result).toBe('Hello, Ada!');

    // Export the history as JSON (as `temporal workflow show --output json`
    // does) and replay it from the file, as the committed replay tests will.
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const dir = await mkdtemp(join(tmpdir(), 'harness-history-'));
    const file = join(dir, 'history.json');
    await writeFile(file, historyToJSON(history));
    const fromFile: unknown = JSON.parse(await readFile(file, 'utf8'));
    await Worker.runReplayHistory({ workflowsPath }, fromFile, workflowId);
  });

  it('replay detects a workflow change that breaks determinism', async () => {
    const taskQueue = uniqueTaskQueue('harness-nd');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      namespace: temporal.namespace,
      taskQueue,
      workflowsPath,
      activities: createHarnessActivities({ salutation: 'Hi' }),
    });
    const workflowId = `harness-${taskQueue}`;
    await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start<typeof harnessWorkflow>('harnessWorkflow', {
        taskQueue,
        workflowId,
        args: ['Bo'],
      });
      await handle.signal('proceed', '.');
      await handle.result();
    });
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    // Replaying the history under another workflow type that schedules no
    // activity must fail: this is what guards committed histories.
    const changed = fileURLToPath(new URL('../harness/changed-workflows.ts', import.meta.url));
    await expect(Worker.runReplayHistory({ workflowsPath: changed }, history, workflowId)).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});
