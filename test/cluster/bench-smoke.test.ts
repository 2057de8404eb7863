// The cluster benchmark at a tiny size: it must run and report (figures come
// from `npm run bench -- cluster`, never asserted here).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

it('runs the cluster-vs-dev-server benchmark at a tiny size and reports it', async () => {
  const report = join(await mkdtemp(join(tmpdir(), 'bench-cluster-smoke-')), 'benchmarks.md');
  const result = await new Promise<{ code: number; output: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', 'bench/run.ts', 'cluster'],
      {
        cwd: root,
        env: { ...process.env, BENCH_REPORT_FILE: report, BENCH_CLUSTER_N: '3', BENCH_CLUSTER_WORKERS: '2', BENCH_E2E_CONCURRENCY: '2' },
        timeout: 400_000,
        maxBuffer: 32 * 1024 * 1024,
      },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, output: `${stdout}\n${stderr}` }),
    ),
  );
  expect(result.code, result.output.slice(-3000)).toBe(0);
  const text = await readFile(report, 'utf8');
  expect(text).toContain('## cluster vs dev server:');
  expect(text).toMatch(/cluster \(PostgreSQL, 4 Temporal services\), 2 worker\(s\)/);
}, 420_000);
