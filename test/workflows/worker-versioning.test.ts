// A rolling upgrade under Worker Versioning on the real dev server, with the sandbox over HTTP. Version 1 runs the
// latest released workflow code (from git: PREVIOUS_VERSION, test/support/code-versions.ts; today's while there is
// none), version 2 today's. A transaction started on version 1 stays on version 1 workers while version 2 becomes
// current, and moves to version 2 at its continue-as-new (the run hands over as soon as the deployment's target
// changed); one started after the switch runs on version 2 from its start. Both complete and are archived; no
// workflow task fails.
import { temporal } from '@temporalio/proto';
import { it } from 'vitest';
import { getEsignStatus, startEsignTransaction } from '../../src/client/transactions.js';
import { replaceTransactionUpdate, statusQuery } from '../../src/definitions/transaction.js';
import type { esignTransaction } from '../../workflows/esign-transaction.js';
import { PREVIOUS_VERSION } from '../support/code-versions.js';
import { eventually } from '../support/eventually.js';
import { devServerAndSandbox } from '../support/sandbox.js';
import { UNVERSIONED, versionedWorkers, type VersionedWorkers } from '../support/versioning.js';

// Each test has a deployment and task queue of its own: they run side by side, as most of their time is waiting for
// the server to register a version and for a run to continue as new.
const env = devServerAndSandbox();

const { EventType, VersioningBehavior } = temporal.api.enums.v1;

/** What an operator does with `temporal worker deployment set-current-version` (docs/operations.md). */
const makeCurrent = (v: VersionedWorkers, buildId: string) =>
  eventually(`version ${buildId} registered and made current`, () =>
    env.ctx.client.workflowService
      .setWorkerDeploymentCurrentVersion({ namespace: env.ctx.namespace, deploymentName: v.deployment, buildId, identity: 'test' })
      .then(
        () => true,
        () => false,
      ),
  );

/** The workflow task failures in a run's history (a nondeterminism error is one). */
const taskFailures = async (h: { fetchHistory(): Promise<{ events?: { eventType?: unknown }[] | null }> }) =>
  ((await h.fetchHistory()).events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);

it.concurrent(
  'pins a transaction to the version it started on and moves it to the current version at continue-as-new',
  async ({ expect }) => {
    const { ctx, sandbox } = env;
    const v = await versionedWorkers(ctx, sandbox, 'versioning', { reuseBundles: true });
    const setCurrent = (buildId: string) => makeCurrent(v, buildId);
    const { taskQueue } = v;
    try {
      await v.start('v1', PREVIOUS_VERSION);
      await setCurrent('v1');
      const { handle: before } = await startEsignTransaction(ctx.client, v.input(), { taskQueue });
      await eventually(
        'the first transaction awaits signatures',
        async () => (await before.query(statusQuery)).phase === 'awaiting_signatures',
      );
      const firstRun = (await before.describe()).runId;
      expect(await v.versionOf(before)).toEqual({
        buildId: 'v1',
        behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      });

      // Version 2 is deployed beside version 1 and made current.
      await v.start('v2');
      await setCurrent('v2');
      const { handle: after } = await startEsignTransaction(ctx.client, v.input(), { taskQueue });
      await eventually('the second transaction runs', async () => (await v.versionOf(after)).buildId === 'v2');

      // The pinned run sees the target changed at its next task (a poll) and hands over; its next run is on v2.
      const latest = ctx.client.workflow.getHandle<typeof esignTransaction>(before.workflowId);
      await eventually('the first transaction continued as new onto v2', async () => {
        const d = await latest.describe();
        return d.runId !== firstRun && (await v.versionOf(latest)).buildId === 'v2';
      });
      const firstRunHandle = ctx.client.workflow.getHandle(before.workflowId, firstRun);
      const handedOver = await firstRunHandle.fetchHistory();
      expect(handedOver.events?.at(-1)?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
      // Every task of the first run was completed by a version 1 worker.
      const builds = new Set(
        (handedOver.events ?? [])
          .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
          .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? null),
      );
      expect([...builds]).toEqual(['v1']);

      await v.signAll(latest);
      await v.signAll(after);
      for (const h of [latest, after]) {
        const result = await h.result();
        expect(result.status).toBe('completed');
        expect(result.archive?.uri).toMatch(/^file:/);
      }
      // No task failed on either version, and no run recorded a patch marker: the pinned transaction has no patch.
      const patchMarkers = async (h: { fetchHistory(): ReturnType<typeof firstRunHandle.fetchHistory> }) => {
        expect(await taskFailures(h)).toEqual([]);
        const events = (await h.fetchHistory()).events ?? [];
        return events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
      };
      expect(await patchMarkers(firstRunHandle)).toBe(0);
      expect(await patchMarkers(latest)).toBe(0);
      expect(await patchMarkers(after)).toBe(0);
    } finally {
      await v.close();
    }
  },
);

// Where a deployment that ran unversioned workers starts: its open transactions must not meet code they did not
// start with. The first versioned release runs the same code; the open run's next task goes to it (the current
// version) and pins it there; from then on it moves like any other, at a continue-as-new.
it.concurrent(
  'pins a transaction started on unversioned workers to the first version, then moves it at continue-as-new',
  async ({ expect }) => {
    const { ctx, sandbox } = env;
    const v = await versionedWorkers(ctx, sandbox, 'unversioned', { reuseBundles: true });
    try {
      await v.start(UNVERSIONED, PREVIOUS_VERSION);
      const { handle } = await startEsignTransaction(ctx.client, v.input(), { taskQueue: v.taskQueue });
      await eventually('the transaction awaits signatures', async () => (await handle.query(statusQuery)).phase === 'awaiting_signatures');
      expect(await v.versionOf(handle)).toEqual({ buildId: null, behavior: null });
      const firstRun = ctx.client.workflow.getHandle(handle.workflowId, (await handle.describe()).runId);

      await v.start('v1', PREVIOUS_VERSION);
      await makeCurrent(v, 'v1');
      await v.stop(UNVERSIONED);
      await eventually('the open run pinned to v1', async () => {
        const at = await v.versionOf(firstRun);
        return at.buildId === 'v1' && at.behavior === VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
      });

      await v.start('v2');
      await makeCurrent(v, 'v2');
      const latest = ctx.client.workflow.getHandle<typeof esignTransaction>(handle.workflowId);
      await eventually('the transaction continued as new onto v2', async () => (await v.versionOf(latest)).buildId === 'v2');
      await v.signAll(latest);
      expect((await latest.result()).status).toBe('completed');
      expect([...(await taskFailures(firstRun)), ...(await taskFailures(latest))]).toEqual([]);
    } finally {
      await v.close();
    }
  },
);

// A run with nothing to do gets no task of its own, so it would never learn that its version lost its place and
// would keep the old workers alive: a draft wakes at the longest poll interval to look, and hands over.
it.concurrent('moves a parked draft to the new version without a message to wake it', async ({ expect }) => {
  const { ctx, sandbox } = env;
  const v = await versionedWorkers(ctx, sandbox, 'parked', { reuseBundles: true });
  try {
    await v.start('v1');
    await makeCurrent(v, 'v1');
    const input = { ...v.input(), status: 'draft' as const, reconcileMaxInterval: '2 seconds' };
    const { handle } = await startEsignTransaction(ctx.client, input, { taskQueue: v.taskQueue });
    await eventually('the draft waits', async () => (await handle.query(statusQuery)).phase === 'draft');
    const firstRun = ctx.client.workflow.getHandle(handle.workflowId, (await handle.describe()).runId);

    await v.start('v2');
    await makeCurrent(v, 'v2');
    const latest = ctx.client.workflow.getHandle<typeof esignTransaction>(handle.workflowId);
    await eventually('the draft continued as new onto v2', async () => (await v.versionOf(latest)).buildId === 'v2');
    await v.stop('v1');
    expect((await latest.query(statusQuery)).phase).toBe('draft');

    await latest.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] });
    await v.signAll(latest);
    expect((await latest.result()).status).toBe('completed');
    expect([...(await taskFailures(firstRun)), ...(await taskFailures(latest))]).toEqual([]);

    // Its version retired, no worker answers a query about it: its status comes from its result.
    await v.stop('v2');
    expect(await getEsignStatus(ctx.client, input.referenceId, 2_000)).toMatchObject({
      phase: 'completed',
      fromResult: true,
      result: { status: 'completed', referenceId: input.referenceId },
    });
  } finally {
    await v.close();
  }
});
