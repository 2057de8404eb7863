import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** The machine a figure was measured on, as printed next to it. */
export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${process.platform}`;
}

/** Samples this process's RSS until stopped; returns the peak. */
export function rssSampler(everyMs = 10): { stop(): number } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage.rss());
    },
  };
}

export const mib = (bytes: number) => bytes / 2 ** 20;
export const fmt = (n: number, digits = 1) => n.toFixed(digits);

export function markdownTable(rows: Record<string, string | number>[]): string {
  const cols = Object.keys(rows[0] ?? {});
  return [
    `| ${cols.join(' | ')} |`,
    `| ${cols.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${cols.map((c) => String(r[c])).join(' | ')} |`),
  ].join('\n');
}

/**
 * Appends a scenario's results to docs/benchmarks.md (or BENCH_REPORT_FILE,
 * which the smoke test uses) with the machine and the command that produced them.
 */
export async function record(scenario: string, command: string, table: string, notes: string[] = []): Promise<void> {
  const file = process.env.BENCH_REPORT_FILE ?? `${root}docs/benchmarks.md`;
  const header =
    '# Benchmarks\n\nFigures appended by `npm run bench` (one scenario: `npm run bench -- <name>`). Each run compares against baselines measured in the same run on the same machine; targets are in the benchmarks issue and are reported, never asserted in tests.\n';
  const existing = await readFile(file, 'utf8').catch(() => '');
  if (!existing) await writeFile(file, header);
  const section = [
    ``,
    `## ${scenario}: ${new Date().toISOString()}`,
    ``,
    `Machine: ${machine()}  `,
    `Command: \`${command}\``,
    ``,
    table,
    ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');
  await appendFile(file, section);
  process.stdout.write(`${table}\n${notes.map((n) => `- ${n}`).join('\n')}\n(appended to docs/benchmarks.md)\n`);
}

export { freePort } from '../src/util/net.js';

/** Starts a TypeScript entry point in its own process and resolves once its output matches `ready`. */
export function startProcess(entry: string, env: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', `${root}${entry}`], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (ready.test(out)) resolve(proc);
    });
    proc.once('exit', (code) => reject(new Error(`${entry} exited (${code}): ${out}`)));
  });
}

export function stopProcess(proc: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

/** CPU seconds used so far and peak RSS (VmHWM) of a child process, from /proc. */
export async function processUsage(pid: number): Promise<{ cpuSeconds: number; peakRssBytes: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]); // utime + stime, in clock ticks (100 Hz on Linux)
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  return { cpuSeconds: ticks / 100, peakRssBytes: hwm };
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** Starts the sandbox in its own process (so its memory is not ours) and returns its URL, a dev token and its webhook secret. */
export async function startSandboxProcess(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ url: string; token: string; webhookSecret: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `${root}src/sandbox/main.ts`], {
    env: { ...process.env, SANDBOX_PORT: '0', SANDBOX_DATA_DIR: dataDir, SANDBOX_MAX_UPLOAD_BYTES: String(2 ** 31), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const { url, token, webhookSecret } = await new Promise<{ url: string; token: string; webhookSecret: string }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      const token = /dev API token:\s+(\S+)/.exec(out)?.[1];
      const webhookSecret = /webhook secret:\s+(\S+)/.exec(out)?.[1];
      if (url && token && webhookSecret) resolve({ url, token, webhookSecret });
    });
    child.once('exit', (code) => reject(new Error(`sandbox exited (${code}): ${out}`)));
  });
  return {
    url,
    token,
    webhookSecret,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Writes the prebuilt workflow bundle production workers use, so bench workers do not bundle at start. */
export async function prebuiltBundle(dir: string): Promise<string> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { workflowsPath } = await import('../src/worker/create-worker.js');
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const path = `${dir}/workflow-bundle.js`;
  await writeFile(path, code);
  return path;
}
