import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { EsignClient } from '../src/esign/client.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { launch, type Launched } from '../tools/support/launch.js';
import { prebuiltBundle } from '../tools/support/bundle.js';
import { launchSandbox, sandboxBridgeEnv, sandboxWorkerEnv } from '../tools/support/sandbox-process.js';
import { freePort } from '../tools/support/net.js';
import { benchTemporal, type BenchTemporal } from './setup.js';

/** The whole system for a scenario: a dev server, and the sandbox, bridge and worker each in its own process. */
export interface BenchStack {
  temporal: BenchTemporal;
  client: Client;
  provider: EsignClient;
  worker: Launched;
  sandboxUrl: string;
  taskQueue: string;
  work: string;
  /** A small PDF inside the worker's document root. */
  pdf: string;
  /** Signs as a participant through the sandbox (it then sends the webhook). */
  sign: (transactionId: string, participantId: string) => Promise<void>;
  /** Whether the sandbox sends its webhooks (off for baseline P, whose transactions have no workflow to reach). */
  webhooks: (on: boolean) => Promise<void>;
  /** The processes a transaction's CPU is spent in, besides the worker(s), by name (CPU per transaction in the e2e figures). */
  pids: { sandbox: number; bridge: number };
  /** Another worker process on the same task queue (the scale-out run); the caller stops it. */
  addWorker: () => Promise<Launched>;
  stop: () => Promise<void>;
}

export async function startBenchStack(
  name: string,
  /** Extra worker settings; a function of the stack's work dir when they name a place in it. */
  options: { workerEnv?: Record<string, string> | ((work: string) => Record<string, string>) } = {},
): Promise<BenchStack> {
  const temporal = await benchTemporal();
  const work = await mkdtemp(join(tmpdir(), `bench-${name}-`));
  const docs = join(work, 'docs');
  await mkdir(docs, { recursive: true });
  const pdf = join(docs, 'agreement.pdf');
  await writeFile(pdf, await samplePdf('Agreement'));
  const taskQueue = `bench-${name}`;
  const bridgePort = await freePort();
  const sandbox = await launchSandbox(join(work, 'sandbox'), {
    SANDBOX_WEBHOOK_URLS: `http://127.0.0.1:${bridgePort}/webhooks/esign`,
  });
  const common = { TEMPORAL_ADDRESS: temporal.address, ESIGN_TASK_QUEUE: taskQueue, LOG_LEVEL: 'warn', ESIGN_METRICS_ADDRESS: '' };
  const bridge = await launch('src/bridge/main.ts', {
    env: { ...common, BRIDGE_PORT: String(bridgePort), ...sandboxBridgeEnv(sandbox), BRIDGE_LOG: 'false' },
    ready: /listening/,
  });
  const workerEnv = {
    ...common,
    ESIGN_WORKFLOW_BUNDLE: await prebuiltBundle(work),
    ...sandboxWorkerEnv(sandbox, { archive: join(work, 'archive'), documents: docs }),
    LOG_LEVEL: 'info',
    // BENCH_PROFILE_DIR: each worker writes a V8 CPU profile there when it stops (bench/profile-summary.ts reads it).
    ...(process.env.BENCH_PROFILE_DIR ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` } : {}),
    ...(typeof options.workerEnv === 'function' ? options.workerEnv(work) : options.workerEnv),
  };
  // BENCH_WORKER_NODE_FLAGS: the worker's Node flags instead of its own (src/worker/node-flags.ts), to compare them;
  // "none" runs it with none.
  const flagsAsked = process.env.BENCH_WORKER_NODE_FLAGS;
  const nodeFlags = flagsAsked === undefined ? undefined : flagsAsked === 'none' ? [] : flagsAsked.split(/\s+/).filter(Boolean);
  const addWorker = () => launch('src/worker/main.ts', { env: workerEnv, ready: /worker polling/, ...(nodeFlags ? { nodeFlags } : {}) });
  const worker = await addWorker();
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection });
  const provider = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token });
  return {
    temporal,
    client,
    provider,
    worker,
    sandboxUrl: sandbox.url,
    pids: { sandbox: sandbox.process.child.pid!, bridge: bridge.child.pid! },
    taskQueue,
    work,
    pdf,
    sign: async (transactionId, participantId) => {
      await sandbox.control.signAs(transactionId, participantId);
    },
    addWorker,
    webhooks: async (on) => {
      await sandbox.control.setFaults(on ? {} : { dropWebhookRate: 1 });
    },
    stop: async () => {
      await provider.close();
      await connection.close();
      await worker.stop();
      await bridge.stop();
      await sandbox.stop();
      await temporal.teardown();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** The one signer of a bench transaction. */
export function benchSigner(id: string) {
  return {
    id,
    email: 's@example.com',
    firstName: 'Sam',
    lastName: 'Signer',
    authenticationType: 'none',
    twoFactorContact: 'email',
  } as const;
}

/** A pending one-document transaction at the provider, to be completed with a ZIP made elsewhere (the archive scenarios). */
export async function pendingTransaction(provider: EsignClient, pdf: string, referenceId: string) {
  const [uploaded] = await provider.uploadDocuments([{ path: pdf }]);
  const created = await provider.createTransaction({
    status: 'esign_pending',
    referenceId,
    documents: [{ title: 'Agreement', StoragePath: uploaded!.StoragePath, tags: [] }],
    participants: [benchSigner(crypto.randomUUID())],
  });
  return { transactionId: created.id!, esignId: created.esignId!, storagePath: uploaded!.StoragePath };
}
