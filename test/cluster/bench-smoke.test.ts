// The cluster benchmark at a tiny size: it must run and report (figures come
// from `npm run bench -- cluster`, never asserted here).
import { expect, it } from 'vitest';
import { runBench } from '../support/bench.js';

it('runs the cluster-vs-dev-server benchmark at a tiny size and reports it', async () => {
  const result = await runBench(
    ['cluster'],
    { BENCH_CLUSTER_N: '3', BENCH_CLUSTER_WORKERS: '1', BENCH_E2E_CONCURRENCY: '2', BENCH_ROUNDS: '1', BENCH_WARMUP: '0' },
    400_000,
  );
  expect(result.code, result.output.slice(-3000)).toBe(0);
  const text = result.report;
  expect(text).toContain('## cluster vs dev server:');
  expect(text).toMatch(/cluster \(PostgreSQL, 4 Temporal services\), 1 worker\(s\)/);
}, 420_000);
