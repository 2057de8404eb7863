// Issue 39, item 1: a cancel accepted while a batch writes its result, when the result sends the batch back to
// following and its run must hand over (the deployment's current version changed; a full history does the same).
// The hand-over waited for every handler to finish and the cancel's handler for the withdrawals, which only the
// loop sends: neither moved, and the cancel was never answered. Now the hand-over sends the withdrawals first
// (workflows/README.md, rules 1 and 2), answers the cancel, and the next run, on the new version, ends the batch
// `cancelled`.
//
// On the suite's real dev server, with two versioned workers of today's code and the bulk activities stubbed, so
// the cancel lands in the one place it did harm: during the result's write. The runs' histories are replayed
// against today's code; RECORD_BULK_HISTORIES=1 records them as test/replay/histories/<current version>/bulk-cancel-in-hand-over-*.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundle } from '@temporalio/worker';
import { format } from 'prettier';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  BULK_WORKFLOW_TYPE,
  cancelBatchUpdate,
  type BatchCounts,
  type BatchResult,
  type BulkSendInput,
} from '../../src/definitions/bulk.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { CURRENT_VERSION } from '../support/code-versions.js';
import { eventually } from '../support/eventually.js';
import { connectToTestServer, uniqueTaskQueue, type TemporalTestContext } from '../support/temporal.js';

const { EventType } = temporal.api.enums.v1;

/** This path's histories: the run that took the cancel and handed over (-1), and the run that ended the batch (-2). */
const HISTORIES = ['bulk-cancel-in-hand-over-1.json', 'bulk-cancel-in-hand-over-2.json'].map((f) =>
  fileURLToPath(new URL(`../replay/histories/${CURRENT_VERSION}/${f}`, import.meta.url)),
);

/** How long a cancel may take to be answered here: its withdrawals are one stubbed activity. */
const ANSWER_WITHIN_MS = 20_000;

let ctx: TemporalTestContext;
let workflowBundle: WorkflowBundle;

beforeAll(async () => {
  ctx = await connectToTestServer();
  // Today's source, bundled here: this test is about the code in the tree, whatever bundle the suite prebuilt.
  // BULK_CANCEL_HANG_CODE names another workflows/index.ts (the code before the fix, to watch it hang).
  workflowBundle = await bundleWorkflowCode({
    workflowsPath: process.env.BULK_CANCEL_HANG_CODE ?? workflowsPath,
    logger: new DefaultLogger('WARN'),
  });
});

afterAll(async () => {
  await ctx?.close();
});

function deferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * The bulk activities of a three-row, one-page batch whose transactions have all ended by the first count: the
 * batch reaches its report at once. The batch's first result write is held until the test lets it go, with the
 * number of transactions it says still run.
 */
function stubbedBulk(batchId: string) {
  const ended: BatchCounts = { inFlight: 0, waiting: 0, completed: 2, endedOtherwise: 1, failed: 0 };
  const reporting = deferred<void>();
  const firstResult = deferred<number>();
  const cancels: { batchId: string; pages: number }[] = [];
  const results: { batchId: string; pages: number; startedPages: number }[] = [];
  const activities = {
    async prepareBatch(_input: { batchId: string }) {
      return { rows: 3, pages: 1 };
    },
    async startBatchPage(_input: { batchId: string; page: number }) {
      return { started: 3, invalid: [] };
    },
    async batchCounts(_input: { batchId: string }): Promise<BatchCounts> {
      return ended;
    },
    async cancelBatchTransactions(input: { batchId: string; pages: number }) {
      cancels.push({ batchId: input.batchId, pages: input.pages });
      return { asked: 3 };
    },
    async writeBatchResult(input: { batchId: string; pages: number; startedPages: number }) {
      results.push({ batchId: input.batchId, pages: input.pages, startedPages: input.startedPages });
      const url = `file:///bulk/${input.batchId}/result.csv`;
      if (input.batchId !== batchId || results.filter((r) => r.batchId === batchId).length > 1) return { url, running: 0 };
      reporting.resolve();
      return { url, running: await firstResult.promise };
    },
  };
  return { activities, reporting: reporting.promise, releaseResult: (running: number) => firstResult.resolve(running), cancels, results };
}

const input = (batchId: string): BulkSendInput => ({
  batchId,
  name: 'Cancelled in its report',
  template: 'NDA-bulk@1',
  csvKey: 'bulk/uploads/0.csv',
  maxInFlight: 50,
});

/** Resolves with `promise`, or rejects saying what never happened within `ms`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** The run's pending activities and last events: a run stuck in its hand-over has neither an activity nor a timer. */
async function whereItStands(handle: WorkflowHandle): Promise<string> {
  const pending = ((await handle.describe()).raw.pendingActivities ?? []).map((a) => a.activityType?.name);
  const events = eventsOf(await handle.fetchHistory())
    .slice(-6)
    .map((e) => EventType[e.eventType as number]?.replace('EVENT_TYPE_', ''));
  return `pending activities [${pending.join(', ')}], last events ${events.join(' ')}`;
}

const eventsOf = (h: History) => h.events ?? [];
const activitiesOf = (h: History) =>
  eventsOf(h)
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter((n): n is string => !!n);

it('answers a cancel taken while the batch writes its result, when the batch must then hand over: the withdrawals go first', async () => {
  const taskQueue = uniqueTaskQueue('bulk-cancel-hang');
  const deployment = `esign-${taskQueue}`;
  const batchId = `bulk-cancel-hang-${taskQueue.slice(-6)}`;
  const bulk = stubbedBulk(batchId);
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const start = async (buildId: string) => {
    const worker = await Worker.create({
      connection: ctx.nativeConnection,
      namespace: ctx.namespace,
      taskQueue,
      workflowBundle,
      activities: bulk.activities,
      workerDeploymentOptions: {
        useWorkerVersioning: true,
        version: { deploymentName: deployment, buildId },
        defaultVersioningBehavior: 'PINNED',
      },
    });
    workers.push({ worker, running: worker.run() });
  };
  // What an operator does with `temporal worker deployment set-current-version` (docs/operations.md).
  const makeCurrent = (buildId: string) =>
    eventually(`version ${buildId} registered and made current`, () =>
      ctx.client.workflowService
        .setWorkerDeploymentCurrentVersion({ namespace: ctx.namespace, deploymentName: deployment, buildId, identity: 'test' })
        .then(
          () => true,
          () => false,
        ),
    );
  const buildOf = async (h: WorkflowHandle) =>
    (await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? null;

  const handle = ctx.client.workflow.getHandle(batchId);
  try {
    await start('v1');
    await makeCurrent('v1');
    await ctx.client.workflow.start(BULK_WORKFLOW_TYPE, { workflowId: batchId, taskQueue, args: [input(batchId)] });
    const firstRunId = (await handle.describe()).runId;

    // The batch writes its result; the cancel is accepted meanwhile (the batch is `reporting`).
    await within(30_000, 'the batch reached its report', bulk.reporting);
    const update = await handle.startUpdate(cancelBatchUpdate, {
      args: [{ reason: 'cancelled in its report' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });

    // Version 2 becomes current: the pinned run must hand over at its next step. A batch started now runs on it.
    await start('v2');
    await makeCurrent('v2');
    const probeId = `${batchId}-probe`;
    await ctx.client.workflow.start(BULK_WORKFLOW_TYPE, { workflowId: probeId, taskQueue, args: [input(probeId)] });
    await eventually(
      'a batch started after the switch runs on v2',
      async () => (await buildOf(ctx.client.workflow.getHandle(probeId))) === 'v2',
    );

    // The result says a transaction still runs: back to following, then the hand-over. The cancel is answered.
    bulk.releaseResult(1);
    const answered = await within(ANSWER_WITHIN_MS, 'the cancel taken during the report was never answered', update.result()).catch(
      async (err: Error) => {
        throw new Error(`${err.message}; ${await whereItStands(handle)}`);
      },
    );
    expect(answered.phase).toBe('following');
    expect(bulk.cancels).toEqual([{ batchId, pages: 1 }]);

    // The batch ends `cancelled` on v2, its withdrawals sent once, its result written again by the new run.
    const result = (await within(30_000, 'the batch ended', handle.result())) as BatchResult;
    expect(result).toMatchObject({ phase: 'cancelled', rows: 3, started: 3, resultUrl: `file:///bulk/${batchId}/result.csv` });
    expect(bulk.cancels).toEqual([{ batchId, pages: 1 }]);
    expect(bulk.results.filter((r) => r.batchId === batchId)).toEqual([
      { batchId, pages: 1, startedPages: 1 },
      { batchId, pages: 1, startedPages: 1 },
    ]);

    // The first run took the cancel, answered it, then handed over; every task on v1. The second ran on v2.
    const first = await ctx.client.workflow.getHandle(batchId, firstRunId).fetchHistory();
    const firstEvents = eventsOf(first);
    expect(firstEvents.at(-1)?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    expect(activitiesOf(first).slice(-2)).toEqual(['writeBatchResult', 'cancelBatchTransactions']);
    expect(firstEvents.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED)).toBe(true);
    const buildsOf = (h: History) =>
      new Set(
        eventsOf(h)
          .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
          .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? null),
      );
    expect([...buildsOf(first)]).toEqual(['v1']);
    const secondRunId = (await handle.describe()).runId;
    expect(secondRunId).not.toBe(firstRunId);
    const second = await ctx.client.workflow.getHandle(batchId, secondRunId).fetchHistory();
    expect([...buildsOf(second)]).toEqual(['v2']);
    expect(activitiesOf(second)).not.toContain('cancelBatchTransactions');
    for (const h of [first, second])
      expect(eventsOf(h).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual([]);

    // Both runs replay on today's code.
    const replayed = Worker.runReplayHistories({ workflowBundle }, [
      { workflowId: 'first', history: first },
      { workflowId: 'second', history: second },
    ]);
    for await (const r of replayed) expect(r.error, r.workflowId).toBeUndefined();
    if (process.env.RECORD_BULK_HISTORIES === '1')
      for (const [i, h] of [first, second].entries()) {
        await mkdir(dirname(HISTORIES[i]!), { recursive: true });
        await writeFile(HISTORIES[i]!, await format(historyToJSON(h), { filepath: HISTORIES[i]! }));
      }
  } finally {
    // A run left waiting (the defect) is not left behind on the shared server.
    await handle.terminate('test over').catch(() => undefined);
    await ctx.client.workflow
      .getHandle(`${batchId}-probe`)
      .terminate('test over')
      .catch(() => undefined);
    bulk.releaseResult(0);
    for (const w of workers) if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await Promise.all(workers.map((w) => w.running));
  }
}, 180_000);
