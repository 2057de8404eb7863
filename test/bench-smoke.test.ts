import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// A cheap run of every benchmark scenario: it must run and report (how fast is
// for `npm run bench`, never asserted here).
const root = fileURLToPath(new URL('..', import.meta.url));

it('runs every benchmark scenario at a tiny size and reports each one', async () => {
  const report = join(await mkdtemp(join(tmpdir(), 'bench-smoke-')), 'benchmarks.md');
  const result = await new Promise<{ code: number; output: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', 'bench/run.ts'],
      {
        cwd: root,
        env: {
          ...process.env,
          BENCH_REPORT_FILE: report,
          BENCH_E2E_N: '3',
          BENCH_E2E_CONCURRENCY: '2',
          BENCH_SECONDS: '1',
          BENCH_CONNECTIONS: '4',
          BENCH_ARCHIVE_SIZES: '1,2',
          BENCH_EVIDENCE_SIZES: '1',
          BENCH_EVIDENCE_RUNS: '1',
          BENCH_WAITING_N: '5',
          BENCH_MEMORY_N: '5',
        },
        timeout: 300_000,
        maxBuffer: 32 * 1024 * 1024,
      },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, output: `${stdout}\n${stderr}` }),
    ),
  );
  expect(result.code, result.output.slice(-3000)).toBe(0);
  const text = await readFile(report, 'utf8');
  for (const scenario of [
    'end-to-end transactions',
    'webhook ingestion',
    'archive streaming',
    'evidence verification',
    'many waiting transactions',
    'memory per cached workflow',
  ]) {
    expect(text).toContain(`## ${scenario}:`);
  }
  expect(text).toContain('Command: `npm run bench -- ');
}, 320_000);
