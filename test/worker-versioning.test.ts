// A rolling upgrade under Worker Versioning on the real dev server, with the sandbox over HTTP: a transaction
// started on version 1 stays on version 1 workers while version 2 becomes current, and moves to version 2 at its
// continue-as-new (the run hands over as soon as the deployment's target changed); one started after the switch
// runs on version 2 from its start. Both complete and are archived; nothing fails.
import { temporal } from '@temporalio/proto';
import { expect, it } from 'vitest';
import { startEsignTransaction } from '../src/client/transactions.js';
import { statusQuery } from '../src/definitions/transaction.js';
import type { esignTransaction } from '../workflows/esign-transaction.js';
import { eventually } from './support/eventually.js';
import { devServerAndSandbox } from './support/sandbox.js';
import { versionedWorkers } from './support/versioning.js';

const env = devServerAndSandbox();

const { EventType } = temporal.api.enums.v1;

it('pins a transaction to the version it started on and moves it to the current version at continue-as-new', async () => {
  const { ctx, sandbox } = env;
  const v = await versionedWorkers(ctx, sandbox, 'versioning');
  // What an operator does with `temporal worker deployment set-current-version` (docs/operations.md).
  const setCurrent = (buildId: string) =>
    eventually(`version ${buildId} registered and made current`, () =>
      ctx.client.workflowService
        .setWorkerDeploymentCurrentVersion({ namespace: ctx.namespace, deploymentName: v.deployment, buildId, identity: 'test' })
        .then(
          () => true,
          () => false,
        ),
    );
  const { taskQueue } = v;
  try {
    await v.start('v1');
    await setCurrent('v1');
    const { handle: before } = await startEsignTransaction(ctx.client, v.input(), { taskQueue });
    await eventually(
      'the first transaction awaits signatures',
      async () => (await before.query(statusQuery)).phase === 'awaiting_signatures',
    );
    const firstRun = (await before.describe()).runId;
    expect(await v.versionOf(before)).toEqual({
      buildId: 'v1',
      behavior: temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
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
    const handedOver = await ctx.client.workflow.getHandle(before.workflowId, firstRun).fetchHistory();
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
  } finally {
    await v.close();
  }
});
