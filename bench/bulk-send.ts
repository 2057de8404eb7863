// `npm run bench -- bulk`: a bulk send beside interactive signing. Interactive transactions (start with the
// signer's URL, update-with-start) arrive at a steady rate, first alone, then while a batch of BENCH_BULK_ROWS
// rows is being sent; their start→signing-URL latency is compared in the same run (goal: p99 beside the batch at
// most 1.5× alone). The batch's rate while the interactive phase ran beside it, rows started per second, is reported
// beside the rate of the same transactions started one by one (the end-to-end rate, nothing else running). The batch
// is cancelled after the phase: a 5,000-row batch at a pace that leaves room for interactive signing would take an
// hour to send, and what is measured is what runs beside it.
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { batchProgress, cancelBatch, sendBulk } from '../src/client/bulk.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { LocalObjectStore } from '../src/storage/object-store.js';
import { LocalTemplateStore } from '../src/templates/index.js';
import { NDA_DEFINITION, ndaCsv } from '../test/support/nda-template.js';
import { fmt, markdownTable, percentile, record } from './lib.js';
import { startBenchStack, type BenchStack } from './stack.js';
import { startWithSigningUrl } from './transactions.js';
import { WARMUP } from './setup.js';

const ROWS = Number(process.env.BENCH_BULK_ROWS ?? 5000);
const MAX_IN_FLIGHT = Number(process.env.BENCH_BULK_IN_FLIGHT ?? 50);
/** The batch's pace in rows per second (the product's default when unset). */
const PACE = process.env.BENCH_BULK_PACE === undefined ? undefined : Number(process.env.BENCH_BULK_PACE);
/** Interactive starts per second, and for how long each phase measures them. */
const RATE = Number(process.env.BENCH_BULK_INTERACTIVE_RATE ?? 2);
const SECONDS = Number(process.env.BENCH_BULK_SECONDS ?? 30);
/** The worker's activity and workflow task slots (its defaults when unset). */
const SLOTS = process.env.BENCH_BULK_WORKER_SLOTS;

export async function bulkSend(command: string): Promise<void> {
  const stack = await startBenchStack('bulk', {
    workerEnv: (work) => ({
      ESIGN_TEMPLATE_STORE: join(work, 'templates'),
      // Fewer task slots than the load: tasks wait in the server's queue, where priority orders them.
      ...(SLOTS ? { ESIGN_MAX_CONCURRENT_ACTIVITIES: SLOTS, ESIGN_MAX_CONCURRENT_WORKFLOW_TASKS: SLOTS } : {}),
    }),
  });
  try {
    const storeDir = join(stack.work, 'templates');
    const stores = { templates: new LocalTemplateStore(storeDir), objects: new LocalObjectStore(storeDir) };
    await writeFile(join(stack.work, 'nda.pdf'), await samplePdf('NDA'));
    await stores.templates.create(structuredClone(NDA_DEFINITION) as never, stack.work);
    {
      // Warm-up: the worker's caches and the bundle's first tasks (BENCH_WARMUP=0: none).
      if (WARMUP > 0) await interactive(stack, 1, 5, 'warm');
      const alone = await interactive(stack, RATE, SECONDS, 'alone');
      const batchStart = performance.now();
      const batch = await sendBulk(stack.client, stores, {
        name: `bench ${Date.now()}`,
        template: 'NDA-bulk',
        csv: ndaCsv(ROWS),
        maxInFlight: MAX_IN_FLIGHT,
        ...(PACE !== undefined ? { rowsPerSecond: PACE } : {}),
        taskQueue: stack.taskQueue,
      });
      // Measured once the batch is under way, while it is still creating transactions.
      await waitFor(async () => (await batchProgress(stack.client, batch.batchId)).started >= Math.min(10, ROWS));
      const startedBefore = (await batchProgress(stack.client, batch.batchId)).started;
      const phaseStart = performance.now();
      const beside = await interactive(stack, RATE, SECONDS, 'beside');
      const phaseSeconds = (performance.now() - phaseStart) / 1000;
      const progressAtEnd = await batchProgress(stack.client, batch.batchId);
      const batchRate = (progressAtEnd.started - startedBefore) / phaseSeconds;
      const stillSending = progressAtEnd.started < progressAtEnd.rows - progressAtEnd.invalid;
      // Nobody signs the batch's transactions here: the cancel withdraws them, or the batch would wait for signers.
      await cancelBatch(stack.client, batch.batchId, 'benchmark phase over');
      await batch.handle.result();
      const batchSeconds = (performance.now() - batchStart) / 1000;
      const oneByOne = await oneByOneRate(stack, Math.min(ROWS, 300), MAX_IN_FLIGHT);
      const p99 = (xs: number[]) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          99,
        );
      const p50 = (xs: number[]) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          50,
        );
      const rows = [
        {
          load: 'interactive alone',
          starts: alone.length,
          'p50 ms': fmt(p50(alone), 0),
          'p99 ms': fmt(p99(alone), 0),
          'p99 / alone': '1.00',
        },
        {
          load: `interactive beside a ${ROWS}-row batch`,
          starts: beside.length,
          'p50 ms': fmt(p50(beside), 0),
          'p99 ms': fmt(p99(beside), 0),
          'p99 / alone': fmt(p99(beside) / p99(alone), 2),
        },
      ];
      await record('bulk send beside interactive signing', command, markdownTable(rows), [
        `Interactive: ${RATE} starts per second for ${SECONDS} s per phase, each with its signer's URL in the same call (start→URL); beside the batch, its ${progressAtEnd.started} rows started by the end of the phase. Goal: p99 beside the batch at most 1.5× alone.`,
        `Batch: ${ROWS} rows, pace ${PACE === undefined ? 'the default' : `${PACE} rows/s`}, at most ${MAX_IN_FLIGHT} in flight: ${fmt(batchRate, 2)} rows started per second while the interactive phase ran beside it; ${stillSending ? 'still sending' : 'all sent'} at the phase's end, then cancelled (${fmt(batchSeconds, 1)} s from submission to its end).`,
        `The same transactions started one by one at concurrency ${MAX_IN_FLIGHT} (${Math.min(ROWS, 300)} of them, nothing else running): ${fmt(oneByOne, 2)} per second (the end-to-end rate). Batch / end to end: ${fmt(batchRate / oneByOne, 2)}.`,
      ]);
    }
  } finally {
    await stack.stop();
  }
}

/** Starts `rate` interactive transactions a second for `seconds` (open loop); the start→signing-URL latency of each. */
async function interactive(stack: BenchStack, rate: number, seconds: number, tag: string): Promise<number[]> {
  const latencies: number[] = [];
  const starts: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = t0 + (i * 1000) / rate;
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
    starts.push(
      (async () => {
        const s = performance.now();
        await startWithSigningUrl(stack, `bench-${tag}-${Date.now()}-${i}`);
        latencies.push(performance.now() - s);
      })(),
    );
  }
  await Promise.all(starts);
  return latencies;
}

/** Transactions started one by one (no batch) at `concurrency`, until each has its signing URL: per second. */
async function oneByOneRate(stack: BenchStack, count: number, concurrency: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        await startWithSigningUrl(stack, `bench-one-${Date.now()}-${i}`);
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

async function waitFor(done: () => Promise<boolean>, timeoutMs = 10 * 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > until) throw new Error('the batch did not get there in time');
    await new Promise((r) => setTimeout(r, 500));
  }
}
