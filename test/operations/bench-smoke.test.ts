import { expect, it } from 'vitest';
import { runBench } from '../support/bench.js';

// A cheap run of every benchmark scenario: it must run and report (how fast is
// for `npm run bench`, never asserted here).
/** Two transactions per e2e run, both at once: the concurrency its pool and latency runs have, at the least cost. */
const E2E_N = 2;

it('runs every benchmark scenario at a tiny size and reports each one', async () => {
  const result = await runBench(
    [],
    {
      BENCH_E2E_N: String(E2E_N),
      BENCH_E2E_CONCURRENCY: '2',
      BENCH_ROUNDS: '1',
      BENCH_E2E_HALF_SECONDS: '1',
      BENCH_SECONDS: '1',
      BENCH_CONNECTIONS: '4',
      BENCH_ARCHIVE_SIZES: '1,2',
      BENCH_EVIDENCE_SIZES: '1',
      BENCH_EVIDENCE_RUNS: '1',
      BENCH_WAITING_N: '5',
      BENCH_MEMORY_N: '5',
      BENCH_BULK_ROWS: '10',
      BENCH_BULK_SECONDS: '1',
      BENCH_BULK_PACE: '10',
      // What a tiny run needs no more of: warm-ups, a dev server per scenario, 200 workflows for the webhooks to name,
      // a GiB hashed for the per-GiB hash costs, 50 timed seal checks. Every scenario still runs its whole path.
      BENCH_WARMUP: '0',
      BENCH_ONE_DEV_SERVER: '1',
      BENCH_WEBHOOK_TRANSACTIONS: '20',
      BENCH_HASH_MIB: '16',
      BENCH_EVIDENCE_CHECKS: '1',
      // The worker's own flags, given as a benchmark comparing flags gives them: two, so quoted in the command.
      BENCH_WORKER_NODE_FLAGS: '--max-semi-space-size=16 --heap-growing-percent=50',
    },
    480_000,
  );
  expect(result.code, result.output.slice(-3000)).toBe(0);
  const text = result.report;
  for (const scenario of [
    'end-to-end transactions',
    'webhook ingestion',
    'archive streaming',
    'evidence verification',
    'many waiting transactions',
    'memory per cached workflow',
    'bulk send beside interactive signing',
  ]) {
    expect(text).toContain(`## ${scenario}:`);
  }
  // The command reproduces the figure, sizes included.
  expect(text).toMatch(
    new RegExp(`Command: \`(BENCH_\\w+=(?:'[^']*'|\\S+) )*BENCH_E2E_N=${E2E_N} (BENCH_\\w+=(?:'[^']*'|\\S+) )*npm run bench -- e2e\``),
  );
  expect(text).toContain("BENCH_WORKER_NODE_FLAGS='--max-semi-space-size=16 --heap-growing-percent=50' ");
  // The end-to-end figures the benchmarks issue asks for: the composed ceiling, T's latency, the scale-out run.
  for (const figure of ['ours/C', 'T signal→result', '2 workers / 1', "One transaction's history"]) expect(text).toContain(figure);
  // The webhook path's history as the current version's committed history recorded it: no patch markers (1.0 has none).
  expect(text).toMatch(/as the committed history of \d+\.\d+\.\d+ recorded it: \d+ events: .* 0 patch markers/);
}, 500_000);
