// Scenario "e2e": N transactions at a fixed concurrency through upload ->
// create -> signing URL -> auto-sign in the sandbox -> webhook -> bridge ->
// signal -> download -> archive. Sandbox, bridge and worker run in their own
// processes. Baselines in the same run: T, the same workflow shape with no-op
// activities (Temporal's ceiling here), and P, the same HTTP calls made by a
// plain async loop without Temporal (what durability costs).
import { rm } from 'node:fs/promises';
import { getEsignTransaction } from '../src/client/transactions.js';
import { join } from 'node:path';
import { writeHashed } from '../src/util/streams.js';
import type { baselineTransaction } from './baseline-workflows.js';
import { launch } from '../src/tools/launch.js';
import { pool, processUsage } from '../src/tools/measure.js';
import { describeCounts, fmt, historyCounts, markdownTable, mib, percentile, record } from './lib.js';
import { benchSigner, startBenchStack } from './stack.js';
import { benchTransaction } from './transactions.js';

const N = Number(process.env.BENCH_E2E_N ?? 300);
const CONCURRENCY = Number(process.env.BENCH_E2E_CONCURRENCY ?? 20);

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

export async function endToEnd(command: string): Promise<void> {
  const stack = await startBenchStack('e2e');
  const { client, provider, pdf, work, sign } = stack;
  const baselineWorker = await launch('bench/baseline-worker.ts', {
    env: { TEMPORAL_ADDRESS: stack.temporal.address, ESIGN_TASK_QUEUE: 'bench-baseline' },
    ready: /worker polling/,
  }).catch(async (err: unknown) => {
    await stack.stop();
    throw err;
  });

  const measuredIds: string[] = [];
  const ours = (i: number, startToArchived: number[], webhookToArchived: number[]) => {
    const referenceId = `bench-${process.pid}-${i}-${Date.now()}`;
    if (i >= 1000 && i < 5000) measuredIds.push(referenceId);
    return benchTransaction(stack, referenceId, startToArchived, webhookToArchived);
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
  const baseline = async (i: number) => {
    const workflowId = `baseline-${Date.now()}-${i}`;
    const handle = await client.workflow.start<typeof baselineTransaction>('baselineTransaction', {
      taskQueue: 'bench-baseline',
      workflowId,
    });
    await handle.signal('done');
    await handle.result();
    baselineId ??= workflowId;
  };

  try {
    // Warm up every path (bundles, JIT, connections), then measure.
    await pool(Math.min(10, N), CONCURRENCY, (i) => ours(i, [], []));
    await pool(Math.min(10, N), CONCURRENCY, baseline);
    await pool(Math.min(10, N), CONCURRENCY, plain);

    const startToArchived: number[] = [];
    const webhookToArchived: number[] = [];
    const before = await processUsage(stack.worker.child.pid!);
    let t0 = performance.now();
    await pool(N, CONCURRENCY, (i) => ours(i + 1000, startToArchived, webhookToArchived));
    const oursSeconds = (performance.now() - t0) / 1000;
    const after = await processUsage(stack.worker.child.pid!);

    // Latency at half the peak rate: open-loop arrivals (a start every 1/rate s, whatever is in flight).
    const halfRate = N / oursSeconds / 2;
    const halfN = Math.min(N, Math.max(20, Math.round(halfRate * 40)));
    const halfStart: number[] = [];
    const halfWebhook: number[] = [];
    await Promise.all(
      Array.from({ length: halfN }, async (_, i) => {
        await new Promise((r) => setTimeout(r, (i / halfRate) * 1000));
        await ours(i + 5000, halfStart, halfWebhook);
      }),
    );

    t0 = performance.now();
    await pool(N, CONCURRENCY, (i) => baseline(i + 1000));
    const tSeconds = (performance.now() - t0) / 1000;
    t0 = performance.now();
    await pool(N, CONCURRENCY, (i) => plain(i + 1000));
    const pSeconds = (performance.now() - t0) / 1000;

    const s = sorted(startToArchived);
    const w = sorted(webhookToArchived);
    const hs = sorted(halfStart);
    const hw = sorted(halfWebhook);
    const rows = [
      {
        run: 'esign transactions (ours)',
        'tx/s': fmt(N / oursSeconds, 2),
        'start→archived p50/p95/p99 ms': `${fmt(percentile(s, 50), 0)} / ${fmt(percentile(s, 95), 0)} / ${fmt(percentile(s, 99), 0)}`,
        'webhook→archived p50/p95/p99 ms': `${fmt(percentile(w, 50), 0)} / ${fmt(percentile(w, 95), 0)} / ${fmt(percentile(w, 99), 0)}`,
      },
      {
        run: `ours at half that rate (${fmt(halfRate, 2)} tx/s, open loop)`,
        'tx/s': fmt(halfRate, 2),
        'start→archived p50/p95/p99 ms': `${fmt(percentile(hs, 50), 0)} / ${fmt(percentile(hs, 95), 0)} / ${fmt(percentile(hs, 99), 0)}`,
        'webhook→archived p50/p95/p99 ms': `${fmt(percentile(hw, 50), 0)} / ${fmt(percentile(hw, 95), 0)} / ${fmt(percentile(hw, 99), 0)}`,
      },
      {
        run: 'baseline T: same shape, no-op activities',
        'tx/s': fmt(N / tSeconds, 2),
        'start→archived p50/p95/p99 ms': '-',
        'webhook→archived p50/p95/p99 ms': '-',
      },
      {
        run: 'baseline P: same HTTP calls, no Temporal',
        'tx/s': fmt(N / pSeconds, 2),
        'start→archived p50/p95/p99 ms': '-',
        'webhook→archived p50/p95/p99 ms': '-',
      },
    ];
    // What one transaction costs the server, beside the baseline shape (the first measured of each).
    const oursCounts = await historyCounts(getEsignTransaction(client, measuredIds[0]!));
    const baselineCounts = await historyCounts(client.workflow.getHandle(baselineId!));
    await record('end-to-end transactions', command, markdownTable(rows), [
      `One transaction's history: ${describeCounts(oursCounts)}; baseline T's: ${describeCounts(baselineCounts)} (its inbox workflow on the webhook path not counted).`,
      `${N} transactions at concurrency ${CONCURRENCY}, after a warm-up of 10 per path; then ${halfN} started at half the measured rate to read latency below saturation.`,
      `webhook→archived p99 at half the peak rate: ${fmt(percentile(hw, 99), 0)} ms (target: under 250 ms).`,
      `Ours / T: ${fmt(N / oursSeconds / (N / tSeconds), 2)} (target: at least 0.8). Ours / P: ${fmt(N / oursSeconds / (N / pSeconds), 2)}.`,
      `Worker: ${fmt((after.cpuSeconds - before.cpuSeconds) / N, 3)} CPU seconds per transaction, peak RSS ${fmt(mib(after.peakRssBytes), 0)} MiB.`,
      'webhook→archived is measured from the moment the sandbox accepted the last signature (it then sends the webhook) to the workflow result.',
      'All processes (Temporal, sandbox with its PDF stamping, bridge, worker, this client) share the machine; T and P do far less work per transaction (no PDFs, no ZIP verification).',
      'Worker RSS grows with the workflow cache (each transaction and its inbox stay cached up to ESIGN_MAX_CACHED_WORKFLOWS), not with traffic.',
    ]);
  } finally {
    await baselineWorker.stop();
    await stack.stop();
  }
}
