import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@temporalio/client';
import type { RunningBridge } from '../../src/bridge/index.js';
import { startTestBridge } from './bridge.js';
import { inject } from 'vitest';
import { statusQuery, type EsignTransactionStatus } from '../../src/definitions/transaction.js';
import type { DataConverter } from '@temporalio/common';
import type { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import type { Worker } from '@temporalio/worker';
import type { ActivityDeps } from '../../activities/index.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { startEsignTransaction, type StartOptions } from '../../src/client/transactions.js';
import type { EsignCompletedWebhook } from '../../src/esign/schemas.js';
import type { EsignClient } from '../../src/esign/client.js';
import { createEsignWorker, type EsignWorkerOptions } from '../../src/worker/create-worker.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { samplePdfFiles, sandboxEvidencePolicy, startTestSandbox, type TestSandbox } from './sandbox.js';
import { eventually } from './eventually.js';
import { connectToTestServer, type TemporalTestContext, uniqueTaskQueue } from './temporal.js';

/** Temporal (the suite's dev server), a sandbox over HTTP, and a running worker on its own task queue. */
export interface EsignTestEnv {
  temporal: TemporalTestContext;
  sandbox: TestSandbox;
  /** Present when asked for with `bridge: true`. */
  bridge: RunningBridge | undefined;
  worker: Worker;
  taskQueue: string;
  archiveDir: string;
  pdfs: string[];
  input(overrides?: Partial<EsignTransactionInput>): EsignTransactionInput;
  start(input: EsignTransactionInput, options?: StartOptions): ReturnType<typeof startEsignTransaction>;
  close(): Promise<void>;
}

export async function startEsignTestEnv(
  options: {
    sandbox?: Parameters<typeof startTestSandbox>[0];
    deps?: Partial<ActivityDeps>;
    wrapActivities?: EsignWorkerOptions['wrapActivities'];
    /** Worker and `start` use it (e.g. the encrypting codec); `temporal.client` stays plain, to see raw payloads. */
    dataConverter?: DataConverter;
    /** Worker and `start` plugins (e.g. OpenTelemetry). */
    plugins?: OpenTelemetryPlugin[];
    /** A webhook bridge the sandbox delivers to, as in the dev stack (`env.bridge`). */
    bridge?: boolean;
    /** The worker's provider client, given the sandbox (e.g. through a proxy that makes one endpoint fail). */
    providerClient?: (sandbox: TestSandbox) => Promise<EsignClient>;
  } = {},
): Promise<EsignTestEnv> {
  const temporal = await connectToTestServer();
  const sandbox = await startTestSandbox(options.sandbox);
  const archiveDir = await mkdtemp(join(tmpdir(), 'esign-archive-'));
  const pdfs = await samplePdfFiles(['Employment contract', 'Annex A']);
  const taskQueue = uniqueTaskQueue('esign');
  const worker = await createEsignWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    deps: {
      // Tests poll in seconds; production workers keep the 1-minute floor.
      minReconcileInterval: '1 second',
      client: options.providerClient ? await options.providerClient(sandbox) : sandbox.client,
      archive: new LocalArchiveStore(archiveDir),
      documentRoots: [dirname(pdfs[0]!)],
      evidence: sandboxEvidencePolicy(sandbox),
      ...options.deps,
    },
    ...(options.wrapActivities ? { wrapActivities: options.wrapActivities } : {}),
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
    ...(options.plugins ? { plugins: options.plugins } : {}),
  });
  const startClient =
    options.dataConverter || options.plugins
      ? new Client({
          connection: temporal.client.connection,
          namespace: temporal.namespace,
          ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
          ...(options.plugins ? { plugins: options.plugins } : {}),
        })
      : temporal.client;
  const running = worker.run();
  const bridge = options.bridge
    ? await startTestBridge({
        address: inject('temporalAddress'),
        taskQueue,
        secrets: [sandbox.running.webhookSecret],
        provider: { url: sandbox.running.url, token: sandbox.token },
      })
    : undefined;
  if (bridge) sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
  return {
    temporal,
    sandbox,
    bridge,
    worker,
    taskQueue,
    archiveDir,
    pdfs,
    input(overrides = {}) {
      return {
        referenceId: `ref-${randomUUID()}`,
        documents: [
          {
            title: 'Employment contract',
            source: { path: pdfs[0]! },
            tags: [
              { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 },
              { type: 'SIGNATURETEMPLATE', x: 330, y: 120, width: 200, height: 30, page: 0, signerIndex: 1 },
            ],
          },
          {
            title: 'Annex A',
            source: { path: pdfs[1]! },
            tags: [{ type: 'INITIALSTEMPLATE', x: 72, y: 60, width: 60, height: 30, page: 0, signerIndex: 0 }],
          },
        ],
        participants: [
          { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', authenticationType: 'none', twoFactorContact: 'email' },
          { email: 'alan@example.com', firstName: 'Alan', lastName: 'Turing', authenticationType: 'none', twoFactorContact: 'email' },
        ],
        notifyParticipants: { email: false },
        reconcileInterval: '1 hour',
        ...overrides,
      };
    },
    start(input, startOptions = {}) {
      return startEsignTransaction(startClient, input, { taskQueue, ...startOptions });
    },
    async close() {
      await bridge?.stop();
      // A test may have stopped it already (to start another worker on the queue).
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await sandbox.close();
      await temporal.close();
      await rm(archiveDir, { recursive: true, force: true });
    },
  };
}

/** The webhook payload the provider would send for a completed transaction. */
export function completedWebhook(ids: { transactionId: string; esignId: string }): EsignCompletedWebhook {
  return {
    event: 'esign-completed',
    entity: 'esign',
    data: { notificationId: randomUUID(), entity_id: ids.esignId, transaction_id: ids.transactionId },
  };
}

type TransactionHandle = Awaited<ReturnType<EsignTestEnv['start']>>['handle'];

/** Waits until the workflow reaches `phase`; returns its status then. */
export async function waitForPhase(handle: TransactionHandle, phase: EsignTransactionStatus['phase']): Promise<EsignTransactionStatus> {
  return eventually(
    `phase ${phase}`,
    async () => {
      const status = await handle.query(statusQuery);
      return status.phase === phase && status;
    },
    30_000,
    100,
  );
}
