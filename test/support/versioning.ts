// Versioned workers of one deployment on the suite's dev server, and what a test needs to follow them.
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, type Worker } from '@temporalio/worker';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { CURRENT_VERSION, workflowsPathOf } from './code-versions.js';
import { eventually } from './eventually.js';
import { samplePdfFiles, sandboxEvidencePolicy, type TestSandbox } from './sandbox.js';
import { uniqueTaskQueue, type TemporalTestContext } from './temporal.js';

const quiet = new DefaultLogger('WARN');
/** The build id `start` takes for a worker with no deployment. */
export const UNVERSIONED = 'unversioned';

export interface VersionedWorkers {
  taskQueue: string;
  deployment: string;
  /**
   * Starts a worker of `buildId` running the workflow code of `code` (a version from ./code-versions.ts; today's by
   * default); `UNVERSIONED` starts one outside the deployment, as workers ran before Worker Versioning.
   */
  start(buildId: string, code?: string): Promise<void>;
  stop(buildId: string): Promise<void>;
  /** The version a workflow's current run is on, and its behaviour (PINNED, AUTO_UPGRADE). */
  versionOf(handle: WorkflowHandle): Promise<{ buildId: string | null; behavior: number | null }>;
  input(): EsignTransactionInput;
  /** Signs every participant once the transaction awaits signatures. */
  signAll(handle: WorkflowHandle): Promise<void>;
  close(): Promise<void>;
}

/** Each version's bundle, made once per test file for the callers that ask (`reuseBundles`). */
const bundles = new Map<string, ReturnType<typeof bundleWorkflowCode>>();

export async function versionedWorkers(
  ctx: TemporalTestContext,
  sandbox: TestSandbox,
  prefix: string,
  /**
   * `reuseBundles`: a version's workflow code is bundled once per test file and every worker of it loads that bundle
   * (a bundle costs seconds of CPU); by default each `start` bundles its code afresh.
   */
  options: { reuseBundles?: boolean } = {},
): Promise<VersionedWorkers> {
  const [pdf] = await samplePdfFiles(['Contract']);
  const archive = new LocalArchiveStore(await mkdtemp(join(tmpdir(), 'esign-versioning-')));
  const taskQueue = uniqueTaskQueue(prefix);
  const deployment = `esign-${taskQueue}`;
  const workers = new Map<string, { worker: Worker; running: Promise<void> }>();
  const stop = async (buildId: string) => {
    const w = workers.get(buildId);
    if (!w) return;
    if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await w.running;
    workers.delete(buildId);
  };
  return {
    taskQueue,
    deployment,
    async start(buildId, code = CURRENT_VERSION) {
      const bundle = async () => bundleWorkflowCode({ workflowsPath: await workflowsPathOf(code), logger: quiet });
      let bundling = options.reuseBundles ? bundles.get(code) : undefined;
      if (!bundling) {
        bundling = bundle();
        if (options.reuseBundles) bundles.set(code, bundling);
      }
      const workflowBundle = await bundling;
      const worker = await createEsignWorker({
        workflowBundle,
        connection: ctx.nativeConnection,
        namespace: ctx.namespace,
        taskQueue,
        ...(buildId === UNVERSIONED ? {} : { deployment: { name: deployment, buildId } }),
        deps: {
          minReconcileInterval: '1 second',
          client: sandbox.client,
          archive,
          documentRoots: [dirname(pdf!)],
          evidence: sandboxEvidencePolicy(sandbox),
        },
      });
      workers.set(buildId, { worker, running: worker.run() });
    },
    stop,
    async versionOf(handle) {
      const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
      return { buildId: info?.deploymentVersion?.buildId ?? null, behavior: info?.behavior ?? null };
    },
    input: () => ({
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
    }),
    async signAll(handle) {
      const status = await eventually('awaiting signatures', async () => {
        const s = await handle.query(statusQuery);
        return s.phase === 'awaiting_signatures' ? s : undefined;
      });
      for (const p of status.participants) await sandbox.control.signAs(status.transactionId!, p.id);
    },
    async close() {
      for (const buildId of [...workers.keys()]) await stop(buildId);
    },
  };
}
