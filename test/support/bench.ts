import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../tools/support/launch.js';

/**
 * Runs `npm run bench` (the same entry, in its own process) with these
 * scenarios and settings, the report going to a scratch file: its exit code,
 * its output, and the report's text.
 */
export async function runBench(
  scenarios: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number; output: string; report: string }> {
  const file = join(await mkdtemp(join(tmpdir(), 'bench-smoke-')), 'benchmarks.md');
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', 'bench/run.ts', ...scenarios],
      { cwd: projectRoot, env: { ...process.env, BENCH_REPORT_FILE: file, ...env }, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, output: `${stdout}\n${stderr}` }),
    ),
  );
  return { code, output, report: code === 0 ? await readFile(file, 'utf8') : '' };
}
