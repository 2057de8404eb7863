// Scenario "cluster": the end-to-end path (start with the signing URL, sign,
// webhook, archive) on the production topology (PostgreSQL, the Temporal
// services as separate processes; docs/cluster.md) beside the dev server
// (one process, SQLite), in the same run on the same machine, one after the
// other. Same worker and bridge code; throughput and latency, and the
// cluster's ratio to the dev server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startTopology } from '../src/cluster/topology.js';
import { dataConverterFromEnv } from '../src/codec/data-converter.js';
import { commandCpuSeconds, pool, processUsage } from '../src/tools/measure.js';
import { fmt, markdownTable, measureTasks, percentile, record, type CpuComponents } from './lib.js';
import { startBenchStack } from './stack.js';
import { benchTransaction, type TransactionTarget } from './transactions.js';

const N = Number(process.env.BENCH_CLUSTER_N ?? 200);
const CONCURRENCY = Number(process.env.BENCH_E2E_CONCURRENCY ?? 20);

interface Measured {
  seconds: number;
  start: number[];
  webhook: number[];
  /** Machine CPU busy during the measured run, as a share of all cores. */
  busy: number;
  /** CPU milliseconds per transaction, by component. */
  cpuPerTx: Record<string, number>;
}

const pidsCpu = (pids: () => (number | undefined)[]) => async () => {
  let sum = 0;
  for (const pid of pids()) if (pid) sum += (await processUsage(pid).catch(() => ({ cpuSeconds: 0 }))).cpuSeconds;
  return sum;
};

async function measure(target: TransactionTarget, label: string, components: CpuComponents): Promise<Measured> {
  // Warm up (bundles, JIT, connections, the cluster's task-queue partitions), then measure.
  await pool(Math.min(10, N), CONCURRENCY, async (i) => {
    await benchTransaction(target, `warm-${label}-${i}-${Date.now()}`, [], []);
  });
  const start: number[] = [];
  const webhook: number[] = [];
  const { seconds, busy, cpuPerTask } = await measureTasks(
    N,
    CONCURRENCY,
    async (i) => {
      await benchTransaction(target, `${label}-${i}-${Date.now()}`, start, webhook);
    },
    components,
  );
  return { seconds, start: start.sort((a, b) => a - b), webhook: webhook.sort((a, b) => a - b), busy, cpuPerTx: cpuPerTask };
}

export async function clusterVsDevServer(command: string): Promise<void> {
  const results: [string, Measured][] = [];

  const dev = await startBenchStack('cluster-baseline');
  try {
    const components: CpuComponents = {
      'Temporal dev server': () => commandCpuSeconds('temporal'),
      workers: pidsCpu(() => [dev.worker.child.pid]),
    };
    results.push(['dev server (in-memory SQLite, one process), 1 worker, 1 bridge', await measure(dev, 'dev', components)]);
  } finally {
    await dev.stop();
  }

  for (const workers of (process.env.BENCH_CLUSTER_WORKERS ?? '1,2').split(',').map(Number)) {
    const work = await mkdtemp(join(tmpdir(), 'bench-cluster-'));
    const topology = await startTopology({ workDir: work, workers, bridges: workers, taskQueue: 'bench-cluster' });
    const connection = await Connection.connect({ address: topology.address });
    try {
      const client = new Client({
        connection,
        namespace: topology.namespace,
        dataConverter: dataConverterFromEnv({ ESIGN_CODEC_KEYS: topology.codecKeys })!,
      });
      const target: TransactionTarget = {
        client,
        taskQueue: topology.taskQueue,
        pdf: join(topology.documentsDir, 'agreement.pdf'),
        sign: (tx, pid) => topology.sandbox.control.signAs(tx, pid).then(() => undefined),
      };
      const components: CpuComponents = {
        history: pidsCpu(() => [topology.temporal.pid('history')]),
        matching: pidsCpu(() => [topology.temporal.pid('matching')]),
        frontend: pidsCpu(() => [topology.temporal.pid('frontend')]),
        PostgreSQL: () => commandCpuSeconds('postgres'),
        workers: pidsCpu(() => topology.workers.map((w) => w.pid)),
        bridges: pidsCpu(() => topology.bridges.map((b) => b.pid)),
        sandbox: pidsCpu(() => [topology.sandbox.process.child.pid]),
      };
      results.push([
        `cluster (PostgreSQL, 4 Temporal services), ${workers} worker(s), ${workers} bridge(s)`,
        await measure(target, `cluster-${workers}`, components),
      ]);
    } finally {
      await connection.close();
      await topology.stop();
      await rm(work, { recursive: true, force: true });
    }
  }

  const base = N / results[0]![1].seconds;
  const ms = (xs: number[]) => `${fmt(percentile(xs, 50), 0)} / ${fmt(percentile(xs, 95), 0)} / ${fmt(percentile(xs, 99), 0)}`;
  const rows = results.map(([run, m]) => ({
    run,
    'tx/s': fmt(N / m.seconds, 2),
    'vs dev server': fmt(N / m.seconds / base, 2),
    'start→archived p50/p95/p99 ms': ms(m.start),
    'webhook→archived p50/p95/p99 ms': ms(m.webhook),
    'machine CPU busy': `${fmt(m.busy * 100, 0)} %`,
    'CPU ms per transaction': Object.entries(m.cpuPerTx)
      .map(([k, v]) => `${k} ${fmt(v, 0)}`)
      .join(', '),
  }));
  await record('cluster vs dev server', command, markdownTable(rows), [
    `${N} transactions at concurrency ${CONCURRENCY} per run (after 10 warm-up ones), each run alone on the machine.`,
    'The dev server keeps history, matching and visibility in one process on SQLite; the cluster adds gRPC hops between its services and PostgreSQL round trips (fsync on commit) for each history event.',
    'On this 2-core machine every process (PostgreSQL, four Temporal services, workers, bridges, the sandbox, this driver) shares the same cores: the second worker adds CPU contention, not CPU.',
  ]);
}
