// Scenario "e2e": N transactions at a fixed concurrency through upload ->
// create -> signing URL -> auto-sign in the sandbox -> webhook -> bridge ->
// signal -> download -> archive. Sandbox, bridge and worker run in their own
// processes. Baselines in the same run: T, the same workflow shape with no-op
// activities (Temporal's ceiling here), and P, the same HTTP calls made by a
// plain async loop without Temporal (what durability costs). Each round also
// reads latency at half the peak rate (ours webhook→archived, T signal→result)
// and runs ours again with a second worker process on the same task queue.
// Figures are reported per round and as the median of the rounds.
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { getEsignTransaction } from '../src/client/transactions.js';
import { join } from 'node:path';
import { writeHashed } from '../src/util/streams.js';
import type { baselineTransaction } from './baseline-workflows.js';
import { launch } from '../tools/support/launch.js';
import { commandCpuSeconds, pool, processUsage } from '../tools/support/measure.js';
import {
  describeCounts,
  describeSpread,
  fmt,
  historyCounts,
  CURRENT_VERSION,
  recordedHistoryCounts,
  markdownTable,
  measureTasks,
  medianOf,
  mib,
  percentile,
  record,
  type CpuComponents,
} from './lib.js';
import { inboxIdFor } from '../src/definitions/inbox.js';
import type { Client } from '@temporalio/client';
import { baselineBundle, WARMUP } from './setup.js';
import { benchSigner, startBenchStack } from './stack.js';
import { benchTransaction } from './transactions.js';

const N = Number(process.env.BENCH_E2E_N ?? 200);
const CONCURRENCY = Number(process.env.BENCH_E2E_CONCURRENCY ?? 20);
/** Rounds of the whole comparison: ratios are reported as their median and spread. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** How long each half-rate (open-loop) latency run lasts. */
const HALF_SECONDS = Number(process.env.BENCH_E2E_HALF_SECONDS ?? 30);

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const p = (xs: number[], q: number) => percentile(sorted(xs), q);
const triple = (xs: number[]) => `${fmt(p(xs, 50), 0)} / ${fmt(p(xs, 95), 0)} / ${fmt(p(xs, 99), 0)}`;

/** Starts `n` tasks at `rate` per second whatever is in flight (open loop), and waits for all. */
async function openLoop(n: number, rate: number, task: (i: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await new Promise((r) => setTimeout(r, (i / rate) * 1000));
      await task(i);
    }),
  );
}

interface Round {
  ours: number;
  t: number;
  p: number;
  ours2: number;
  halfRate: number;
  oursHalf: number[];
  tHalf: number[];
  oursLatency: { start: number[]; webhook: number[] };
  busy1: number;
  busy2: number;
  /** CPU milliseconds per transaction, by process, in the ours, T and P runs. */
  cpu: { ours: CpuSplit; t: CpuSplit; p: CpuSplit };
}

type CpuSplit = Record<string, number>;

export async function endToEnd(command: string): Promise<void> {
  const stack = await startBenchStack('e2e');
  const { client, provider, pdf, work, sign } = stack;
  const baselineWorker = await launch('bench/baseline-worker.ts', {
    env: { TEMPORAL_ADDRESS: stack.temporal.address, ESIGN_TASK_QUEUE: 'bench-baseline', BENCH_BASELINE_BUNDLE: await baselineBundle() },
    ready: /worker polling/,
  }).catch(async (err: unknown) => {
    await stack.stop();
    throw err;
  });

  let serial = 0;
  const measured: { referenceId: string; transactionId: string }[] = [];
  const ours = async (startToArchived: number[], webhookToArchived: number[]) => {
    const referenceId = `bench-${process.pid}-${serial++}-${Date.now()}`;
    const transactionId = await benchTransaction(stack, referenceId, startToArchived, webhookToArchived);
    if (measured.length < 20) measured.push({ referenceId, transactionId });
  };

  const plain = async (i: number) => {
    const [uploaded] = await provider.uploadDocuments([{ path: pdf }]);
    const participantId = crypto.randomUUID();
    const created = await provider.createTransaction({
      status: 'esign_pending',
      referenceId: `plain-${i}-${Date.now()}`,
      documents: [
        {
          title: 'Agreement',
          StoragePath: uploaded!.StoragePath,
          tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerId: participantId, customData: {} }],
        },
      ],
      participants: [benchSigner(participantId)],
    });
    await provider.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [participantId] } });
    await sign(created.id!, participantId);
    if ((await provider.getTransaction(created.id!)).status !== 'completed') throw new Error('not completed');
    const zip = await provider.downloadCompletedDocuments(created.id!);
    await writeHashed(zip.body, join(work, `plain-${i}.zip`));
    await rm(join(work, `plain-${i}.zip`));
  };

  let baselineId: string | undefined;
  /** T's transaction; with `latency`, it is signalled once waiting and the signal→result time recorded. */
  const baseline = async (i: number, latency?: number[]) => {
    const workflowId = `baseline-${Date.now()}-${i}-${serial++}`;
    const handle = await client.workflow.start<typeof baselineTransaction>('baselineTransaction', {
      taskQueue: 'bench-baseline',
      workflowId,
    });
    // Its three no-op activities take milliseconds: after 300 ms it waits for the signal, as ours waits for the webhook.
    if (latency) await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    await handle.signal('done');
    await handle.result();
    latency?.push(performance.now() - t0);
    baselineId ??= workflowId;
  };
  // Where a run's CPU goes: every process of the system, read from /proc before and after.
  const components: CpuComponents = {
    'Temporal dev server': () => commandCpuSeconds('temporal'),
    worker: async () => (await processUsage(stack.worker.child.pid!)).cpuSeconds,
    sandbox: async () => (await processUsage(stack.pids.sandbox)).cpuSeconds,
    bridge: async () => (await processUsage(stack.pids.bridge)).cpuSeconds,
    'baseline worker': async () => (await processUsage(baselineWorker.child.pid!)).cpuSeconds,
    'this driver': async () => process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
  };
  /** N tasks at the bench's concurrency: their rate, how busy the machine was, and each process's CPU per task. */
  const measure = async (task: (i: number) => Promise<void>): Promise<{ rate: number; busy: number; cpu: CpuSplit }> => {
    const { seconds, busy, cpuPerTask } = await measureTasks(N, CONCURRENCY, task, components);
    return { rate: N / seconds, busy, cpu: cpuPerTask };
  };

  try {
    // Warm up every path (bundles, JIT, connections), then measure.
    const warmup = Math.min(WARMUP, N);
    await pool(warmup, CONCURRENCY, () => ours([], []));
    await pool(warmup, CONCURRENCY, (i) => baseline(i));
    await stack.webhooks(false);
    await pool(warmup, CONCURRENCY, plain);
    await stack.webhooks(true);

    const rounds: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const start: number[] = [];
      const webhook: number[] = [];
      const one = await measure(() => ours(start, webhook));
      const t = await measure((i) => baseline(i));
      // P's transactions have no workflow: their webhooks would only start orphan inboxes, our system's work, not P's.
      await stack.webhooks(false);
      const pl = await measure((i) => plain(i + r * N)).finally(() => stack.webhooks(true));

      // Latency below saturation: both at half of ours' peak rate, open loop.
      const halfRate = one.rate / 2;
      const halfN = Math.max(Math.min(10, N), Math.round(halfRate * HALF_SECONDS));
      const oursHalf: number[] = [];
      await openLoop(halfN, halfRate, () => ours([], oursHalf));
      const tHalf: number[] = [];
      await openLoop(halfN, halfRate, (i) => baseline(i, tHalf));

      // Scale-out: the same load with a second worker process on the task queue.
      const second = await stack.addWorker();
      let two;
      try {
        await pool(warmup, CONCURRENCY, () => ours([], [])); // warm the new worker's cache and connections
        two = await measure(() => ours([], []));
      } finally {
        await second.stop();
      }
      rounds.push({
        ours: one.rate,
        t: t.rate,
        p: pl.rate,
        ours2: two.rate,
        halfRate,
        oursHalf,
        tHalf,
        oursLatency: { start, webhook },
        busy1: one.busy,
        busy2: two.busy,
        cpu: { ours: one.cpu, t: t.cpu, p: pl.cpu },
      });
      process.stdout.write(
        `e2e round ${r + 1}/${ROUNDS}: ours ${fmt(one.rate, 2)}, T ${fmt(t.rate, 2)}, P ${fmt(pl.rate, 2)}, 2 workers ${fmt(two.rate, 2)} tx/s\n`,
      );
    }

    const ceiling = (x: Round) => 1 / (1 / x.t + 1 / x.p);
    const rows = rounds.map((x, i) => ({
      round: i + 1,
      'ours tx/s': fmt(x.ours, 2),
      'T tx/s': fmt(x.t, 2),
      'P tx/s': fmt(x.p, 2),
      'C tx/s': fmt(ceiling(x), 2),
      'ours/T': fmt(x.ours / x.t, 2),
      'ours/P': fmt(x.ours / x.p, 2),
      'ours/C': fmt(x.ours / ceiling(x), 2),
      'start→archived p50/p95/p99 ms': triple(x.oursLatency.start),
      'half rate (tx/s)': fmt(x.halfRate, 2),
      'ours webhook→archived p50/p95/p99 ms': triple(x.oursHalf),
      'T signal→result p50/p95/p99 ms': triple(x.tHalf),
      'p99 ours/T': fmt(p(x.oursHalf, 99) / p(x.tHalf, 99), 2),
      '2 workers tx/s': fmt(x.ours2, 2),
      '2 workers / 1': fmt(x.ours2 / x.ours, 2),
      'machine busy 1 / 2 workers': `${fmt(x.busy1 * 100, 0)} % / ${fmt(x.busy2 * 100, 0)} %`,
    }));

    // What one transaction costs the server, beside the baseline shape.
    const first = measured[0]!;
    const oursCounts = await historyCounts(getEsignTransaction(client, first.referenceId));
    const baselineCounts = await historyCounts(client.workflow.getHandle(baselineId!));
    // The same path as this version's committed history recorded it.
    const recordedNow = await recordedHistoryCounts(CURRENT_VERSION, 'completed-by-webhook.json');
    const inboxes = await inboxesStarted(client, measured);
    const workerPeak = (await processUsage(stack.worker.child.pid!)).peakRssBytes;
    const split = (which: keyof Round['cpu']) => {
      const parts = Object.keys(rounds[0]!.cpu[which]).map((k) => [k, medianOf(rounds.map((x) => x.cpu[which][k] ?? 0)).median] as const);
      const total = parts.reduce((sum, [, ms]) => sum + ms, 0);
      return `${fmt(total, 0)} ms (${parts
        .filter(([, ms]) => ms >= 0.5)
        .map(([k, ms]) => `${k} ${fmt(ms, 0)}`)
        .join(', ')})`;
    };
    const of = (f: (x: Round) => number, digits = 2) => describeSpread(rounds.map(f), digits);
    const cpuOf = (x: Round, which: keyof Round['cpu']) => Object.values(x.cpu[which]).reduce((sum, ms) => sum + (ms ?? 0), 0);
    await record('end-to-end transactions', command, markdownTable(rows), [
      `Median of ${rounds.length} round(s) (min–max): ours/T ${of((x) => x.ours / x.t)}, ours/P ${of((x) => x.ours / x.p)}, ours/C ${of((x) => x.ours / ceiling(x))} (target: at least 0.9), where C = 1/(1/T + 1/P) is the throughput if our only costs were Temporal's minimum for the shape and the provider's own work.`,
      `Latency at half the peak rate, p99: ours webhook→archived / T signal→result ${of((x) => p(x.oursHalf, 99) / p(x.tHalf, 99))} (target: at most 2); ours ${of((x) => p(x.oursHalf, 99), 0)} ms, T ${of((x) => p(x.tHalf, 99), 0)} ms.`,
      `Scale-out, 2 worker processes / 1 on the same task queue: ${of((x) => x.ours2 / x.ours)}; machine CPU busy ${of((x) => x.busy1 * 100, 0)} % with one, ${of((x) => x.busy2 * 100, 0)} % with two.`,
      `One transaction's history: ${describeCounts(oursCounts)}. Baseline T's: ${describeCounts(baselineCounts)}.`,
      `Completed by webhook, as the committed history of ${CURRENT_VERSION} recorded it: ${describeCounts(recordedNow)}.`,
      `Workflows per transaction on the webhook path: the transaction's own; inboxes started for the ${measured.length} measured transactions: ${inboxes} (webhooks reach the transaction directly).`,
      `Worker: ${of((x) => x.cpu.ours.worker! / 1000, 3)} CPU seconds per transaction, peak RSS ${fmt(mib(workerPeak), 0)} MiB.`,
      `CPU per transaction, all processes (median of the rounds): ours ${split('ours')}; T ${split('t')}; P ${split('p')}; ours / (T + P) ${of((x) => cpuOf(x, 'ours') / (cpuOf(x, 't') + cpuOf(x, 'p')))} (target: at most 1.3). The machine has ${availableParallelism()} cores: at full use, ${availableParallelism()} s of CPU per second bounds each run's rate.`,
      `${N} transactions per throughput run at concurrency ${CONCURRENCY}, after a warm-up of ${Math.min(WARMUP, N)} per path; latency runs start ${HALF_SECONDS} s of transactions at half of ours' measured rate (open loop), T's signalled 300 ms after its start, when it waits.`,
      'webhook→archived is measured from the moment the sandbox accepted the last signature (it then sends the webhook) to the workflow result.',
      'All processes (Temporal, sandbox with its PDF stamping and sealing, bridge, worker, this client) share the machine.',
    ]);
  } finally {
    await baselineWorker.stop();
    await stack.stop();
  }
}

/** How many of the transactions have an inbox workflow (none should: an inbox is the late path only). */
async function inboxesStarted(client: Client, measured: { transactionId: string }[]): Promise<number> {
  let found = 0;
  for (const m of measured) {
    const exists = await client.workflow
      .getHandle(inboxIdFor(m.transactionId))
      .describe()
      .then(
        () => true,
        () => false,
      );
    if (exists) found++;
  }
  return found;
}
