// One variant of the "memory" scenario, in a process of its own so that its
// RSS is its own: starts a worker, puts N workflows of one kind in its cache
// (each waiting), and prints the memory and CPU they added, per workflow.
import { readFile } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { createInputValidationActivities } from '../activities/input-validation.js';
import { workflowsPath } from '../src/worker/create-worker.js';
import { UrlPolicy } from '../activities/support/url-policy.js';
import { baselineWorkflowsPath, benchTemporal } from './setup.js';

const variant = process.argv[2] as 'baseline' | 'inbox' | 'transaction';
const N = Number(process.argv[3] ?? 500);
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const env = await benchTemporal({ log: { format: 'pretty', level: 'never' } });
// A bundle made before (the run's baseline bundle, bench/setup.ts; the test suite's ESIGN_WORKFLOW_BUNDLE), else
// bundled here: the same code either way, loaded before anything is measured.
const prebuilt = variant === 'baseline' ? process.env.BENCH_BASELINE_BUNDLE : process.env.ESIGN_WORKFLOW_BUNDLE;
const code = prebuilt
  ? await readFile(prebuilt, 'utf8')
  : (await bundleWorkflowCode({ workflowsPath: variant === 'baseline' ? baselineWorkflowsPath : workflowsPath, logger: quiet })).code;
// A task queue of its own: the server may be the bench run's one (BENCH_ONE_DEV_SERVER), holding other variants' workflows.
const taskQueue = `memory-${variant}-${process.pid}`;
const connection = await NativeConnection.connect({ address: env.address });
// The transaction's steps before it waits, doing nothing: the scenario weighs the workflow, not its activities.
const activities = {
  ...createInputValidationActivities({
    urlPolicy: new UrlPolicy([]),
    minReconcileMs: 1000,
    canSignCallbacks: false,
    requireUploadHashes: false,
  }),
  async upload() {},
  async create() {},
  async register() {},
  async uploadDocuments() {
    return { storagePaths: ['bench'] };
  },
  async createTransaction() {
    return { transactionId: crypto.randomUUID(), esignId: crypto.randomUUID(), status: 'esign_pending' };
  },
};
const worker = await Worker.create({ connection, taskQueue, workflowBundle: { code }, activities, maxCachedWorkflows: N + 100 });
const running = worker.run();
const client = new Client({ connection: await Connection.connect({ address: env.address }) });
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const settle = () => new Promise((r) => setTimeout(r, 2000));

await settle();
gc();
const rss0 = process.memoryUsage.rss();
const cpu0 = process.cpuUsage();
for (let i = 0; i < N; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, N - i) }, (_, k) => {
      const n = i + k;
      if (variant === 'baseline') return client.workflow.start('baselineTransaction', { taskQueue, workflowId: `baseline-${n}` });
      if (variant === 'inbox')
        return client.workflow.start('esignInbox', {
          taskQueue,
          workflowId: `inbox-${n}`,
          args: [{ transactionId: crypto.randomUUID() }],
        });
      return client.workflow.start('esignTransaction', {
        taskQueue,
        workflowId: `transaction-${n}`,
        args: [
          {
            referenceId: `memory-${n}`,
            documents: [
              {
                title: 'A',
                source: { storagePath: 'bench' },
                tags: [{ type: 'SIGNATURETEMPLATE', x: 1, y: 1, width: 10, height: 10, page: 0, signerIndex: 0 }],
              },
            ],
            participants: [
              { email: 'a@example.com', firstName: 'A', lastName: 'B', authenticationType: 'none', twoFactorContact: 'email' },
            ],
            reconcileInterval: '1 day',
          },
        ],
      });
    }),
  );
}
for (let t = 0; t < 240 && worker.getStatus().numCachedWorkflows < N; t++) await new Promise((r) => setTimeout(r, 500));
await settle();
gc();
const cpu = process.cpuUsage(cpu0);
const cached = worker.getStatus().numCachedWorkflows;
process.stdout.write(
  `${JSON.stringify({ variant, N, cached, rssPerWorkflowKiB: (process.memoryUsage.rss() - rss0) / N / 1024, cpuMsPerWorkflow: (cpu.user + cpu.system) / 1000 / N })}\n`,
);
worker.shutdown();
await running;
await env.teardown();
process.exit(0);
