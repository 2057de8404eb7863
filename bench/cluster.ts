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
import { startTopology } from '../tools/cluster/topology.js';
import { dataConverterFromEnv } from '../src/codec/data-converter.js';
import { commandCpuSeconds, pool, processUsage } from '../tools/support/measure.js';
import { describeSpread, fmt, markdownTable, measureTasks, medianOf, percentile, record, type CpuComponents } from './lib.js';
import { WARMUP } from './setup.js';
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
  await pool(Math.min(WARMUP, N), CONCURRENCY, async (i) => {
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

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function devServerRun(): Promise<Measured> {
  const dev = await startBenchStack('cluster-baseline');
  try {
    const components: CpuComponents = {
      'Temporal dev server': () => commandCpuSeconds('temporal'),
      workers: pidsCpu(() => [dev.worker.child.pid]),
    };
    return await measure(dev, 'dev', components);
  } finally {
    await dev.stop();
  }
}

async function clusterRun(workers: number): Promise<Measured> {
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
    return await measure(target, `cluster-${workers}`, components);
  } finally {
    await connection.close();
    await topology.stop();
    await rm(work, { recursive: true, force: true });
  }
}

export async function clusterVsDevServer(command: string): Promise<void> {
  const workerCounts = (process.env.BENCH_CLUSTER_WORKERS ?? '1').split(',').map(Number);
  const labels = [
    'dev server (in-memory SQLite, one process), 1 worker, 1 bridge',
    ...workerCounts.map((w) => `cluster (PostgreSQL, 4 Temporal services), ${w} worker(s), ${w} bridge(s)`),
  ];
  /** Per configuration, each round's measurement; a round runs the dev server, then each cluster, one after the other. */
  const rounds: Measured[][] = labels.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    rounds[0]!.push(await devServerRun());
    for (const [i, workers] of workerCounts.entries()) rounds[i + 1]!.push(await clusterRun(workers));
    process.stdout.write(`  round ${round + 1} of ${ROUNDS} done\n`);
  }

  const rate = (m: Measured) => N / m.seconds;
  const ms = (xs: number[]) => `${fmt(percentile(xs, 50), 0)} / ${fmt(percentile(xs, 95), 0)} / ${fmt(percentile(xs, 99), 0)}`;
  const pooled = (ms: Measured[], pick: (m: Measured) => number[]) => ms.flatMap(pick).sort((a, b) => a - b);
  const rows = labels.map((run, i) => {
    const runs = rounds[i]!;
    // Each round's ratio is taken against the dev server of the same round.
    const ratios = runs.map((m, r) => rate(m) / rate(rounds[0]![r]!));
    const cpu = Object.keys(runs[0]!.cpuPerTx).map((k) => `${k} ${fmt(medianOf(runs.map((m) => m.cpuPerTx[k]!)).median, 0)}`);
    return {
      run,
      [`tx/s, median of ${ROUNDS} (min–max)`]: describeSpread(runs.map(rate)),
      'vs dev server, same round': i === 0 ? '1' : describeSpread(ratios),
      'start→archived p50/p95/p99 ms': ms(pooled(runs, (m) => m.start)),
      'webhook→archived p50/p95/p99 ms': ms(pooled(runs, (m) => m.webhook)),
      'machine CPU busy': `${fmt(medianOf(runs.map((m) => m.busy)).median * 100, 0)} %`,
      'CPU ms per transaction (median)': cpu.join(', '),
    };
  });
  await record('cluster vs dev server', command, markdownTable(rows), [
    `${N} transactions at concurrency ${CONCURRENCY} per run (after ${Math.min(WARMUP, N)} warm-up ones), each run alone on the machine; ${ROUNDS} rounds, each the dev server then the cluster, every topology started afresh. Latencies pool the rounds.`,
    'The dev server keeps history, matching and visibility in one process on SQLite; the cluster adds gRPC hops between its services and PostgreSQL round trips (fsync on commit) for each history event.',
    'On this 2-core machine every process (PostgreSQL, four Temporal services, workers, bridges, the sandbox, this driver) shares the same cores: a second worker adds CPU contention, not CPU (`BENCH_CLUSTER_WORKERS=1,2` measures it).',
  ]);
}
