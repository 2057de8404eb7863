// `npm run bench` runs every scenario but `cluster`; `npm run bench -- <name>` one of them.
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { archiveStreaming } from './archive-streaming.js';
import { bulkSend } from './bulk-send.js';
import { clusterVsDevServer } from './cluster.js';
import { endToEnd } from './end-to-end.js';
import { evidenceVerification } from './evidence-verification.js';
import { manyWaiting } from './many-waiting.js';
import { startRunTemporal } from './setup.js';
import { webhookIngestion } from './webhook-ingestion.js';
import { workflowMemory } from './workflow-memory.js';

// The archive and evidence scenarios run activities in this process, so `npm run bench` gives it the worker's Node
// flags (src/worker/node-flags.ts), for their memory to be measured with a worker's heaps; and they log at WARN, as
// their per-call INFO lines would bury the figures (BENCH_LOG_LEVEL=INFO brings them back).
Runtime.install({ logger: new DefaultLogger((process.env.BENCH_LOG_LEVEL as 'INFO' | 'WARN' | 'ERROR' | undefined) ?? 'WARN') });

const scenarios: Record<string, (command: string) => Promise<void>> = {
  e2e: endToEnd,
  webhooks: webhookIngestion,
  archive: archiveStreaming,
  evidence: evidenceVerification,
  waiting: manyWaiting,
  memory: workflowMemory,
  bulk: bulkSend,
  cluster: clusterVsDevServer,
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in scenarios));
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
// "cluster" needs the Temporal server built from source (minutes, once): it runs only when named.
const everyday = Object.keys(scenarios).filter((name) => name !== 'cluster');
// BENCH_ONE_DEV_SERVER=1 (the bench smoke): one dev server for every scenario of the run, not one each (bench/setup.ts).
const stopRunTemporal = await startRunTemporal();
try {
  for (const name of wanted.length > 0 ? wanted : everyday) {
    process.stdout.write(`== ${name}\n`);
    // The sizes and settings given by environment are part of the command that reproduces a figure.
    const settings = Object.entries(process.env)
      .filter(
        ([key]) =>
          key.startsWith('BENCH_') &&
          !['BENCH_REPORT_FILE', 'BENCH_PROFILE_DIR', 'BENCH_LOG_LEVEL', 'BENCH_TEMPORAL_ADDRESS'].includes(key),
      )
      .map(([key, value = '']) => `${key}=${/\s/.test(value) ? `'${value}'` : value} `)
      .join('');
    await scenarios[name]!(`${settings}npm run bench -- ${name}`);
  }
} finally {
  await stopRunTemporal();
}
