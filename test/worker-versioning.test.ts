// A rolling upgrade under Worker Versioning on the real dev server, with the sandbox over HTTP: a transaction
// started on version 1 stays on version 1 workers while version 2 becomes current, and moves to version 2 at its
// continue-as-new (the run hands over as soon as the deployment's target changed); one started after the switch
// runs on version 2 from its start. Both complete and are archived; nothing fails.
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LocalArchiveStore } from '../src/archive/store.js';
import { startEsignTransaction } from '../src/client/transactions.js';
import { statusQuery } from '../src/definitions/transaction.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { createEsignWorker } from '../src/worker/create-worker.js';
import type { esignTransaction } from '../workflows/esign-transaction.js';
import { eventually } from './support/eventually.js';
import { samplePdfFiles, sandboxEvidencePolicy, startTestSandbox, type TestSandbox } from './support/sandbox.js';
import { connectToTestServer, uniqueTaskQueue, type TemporalTestContext } from './support/temporal.js';

let ctx: TemporalTestContext;
let sandbox: TestSandbox;
beforeAll(async () => {
  ctx = await connectToTestServer();
  sandbox = await startTestSandbox();
});
afterAll(async () => {
  await sandbox?.close();
  await ctx?.close();
});

const { EventType } = temporal.api.enums.v1;

it('pins a transaction to the version it started on and moves it to the current version at continue-as-new', async () => {
  const [pdf] = await samplePdfFiles(['Contract']);
  const archive = new LocalArchiveStore(await mkdtemp(join(tmpdir(), 'esign-versioning-')));
  const taskQueue = uniqueTaskQueue('versioning');
  const deployment = `esign-${taskQueue}`;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const startWorker = async (buildId: string) => {
    const worker = await createEsignWorker({
      connection: ctx.nativeConnection,
      namespace: ctx.namespace,
      taskQueue,
      deployment: { name: deployment, buildId },
      deps: {
        minReconcileInterval: '1 second',
        client: sandbox.client,
        archive,
        documentRoots: [dirname(pdf!)],
        evidence: sandboxEvidencePolicy(sandbox),
      },
    });
    workers.push({ worker, running: worker.run() });
  };
  // What an operator does with `temporal worker deployment set-current-version` (docs/operations.md).
  const setCurrent = (buildId: string) =>
    eventually(`version ${buildId} registered and made current`, () =>
      ctx.client.workflowService
        .setWorkerDeploymentCurrentVersion({ namespace: ctx.namespace, deploymentName: deployment, buildId, identity: 'test' })
        .then(
          () => true,
          () => false,
        ),
    );
  const versionOf = async (handle: WorkflowHandle) => {
    const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
    return { buildId: info?.deploymentVersion?.buildId ?? null, behavior: info?.behavior ?? null };
  };
  const input = (): EsignTransactionInput => ({
    referenceId: `versioning-${randomUUID()}`,
    documents: [
      {
        title: 'Contract',
        source: { path: pdf! },
        tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
      },
    ],
    participants: [
      { email: 'vera@example.com', firstName: 'Vera', lastName: 'Version', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    notifyParticipants: { email: false },
    reconcileInterval: '1 second',
  });
  const signAll = async (handle: WorkflowHandle) => {
    const status = await eventually('awaiting signatures', async () => {
      const s = await handle.query(statusQuery);
      return s.phase === 'awaiting_signatures' ? s : undefined;
    });
    for (const p of status.participants) await sandbox.control.signAs(status.transactionId!, p.id);
  };

  try {
    await startWorker('v1');
    await setCurrent('v1');
    const { handle: before } = await startEsignTransaction(ctx.client, input(), { taskQueue });
    await eventually(
      'the first transaction awaits signatures',
      async () => (await before.query(statusQuery)).phase === 'awaiting_signatures',
    );
    const firstRun = (await before.describe()).runId;
    expect(await versionOf(before)).toEqual({
      buildId: 'v1',
      behavior: temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
    });

    // Version 2 is deployed beside version 1 and made current.
    await startWorker('v2');
    await setCurrent('v2');
    const { handle: after } = await startEsignTransaction(ctx.client, input(), { taskQueue });
    await eventually('the second transaction runs', async () => (await versionOf(after)).buildId === 'v2');

    // The pinned run sees the target changed at its next task (a poll) and hands over; its next run is on v2.
    const latest = ctx.client.workflow.getHandle<typeof esignTransaction>(before.workflowId);
    await eventually('the first transaction continued as new onto v2', async () => {
      const d = await latest.describe();
      return d.runId !== firstRun && (await versionOf(latest)).buildId === 'v2';
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

    await signAll(latest);
    await signAll(after);
    for (const h of [latest, after]) {
      const result = await h.result();
      expect(result.status).toBe('completed');
      expect(result.archive?.uri).toMatch(/^file:/);
    }
  } finally {
    for (const w of workers) if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await Promise.all(workers.map((w) => w.running));
  }
});
