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
  return [`| ${cols.join(' | ')} |`, `| ${cols.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${cols.map((c) => String(r[c])).join(' | ')} |`)].join('\n');
}

/** Appends a scenario's results to docs/benchmarks.md with the machine and the command that produced them. */
export async function record(scenario: string, command: string, table: string, notes: string[] = []): Promise<void> {
  const file = `${root}docs/benchmarks.md`;
  const header = '# Benchmarks\n\nFigures appended by `npm run bench` (one scenario: `npm run bench -- <name>`). Each run compares against baselines measured in the same run on the same machine; targets are in the benchmarks issue and are reported, never asserted in tests.\n';
  const existing = await readFile(file, 'utf8').catch(() => '');
  if (!existing) await writeFile(file, header);
  const section = [``, `## ${scenario}: ${new Date().toISOString()}`, ``, `Machine: ${machine()}  `, `Command: \`${command}\``, ``, table, ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []), ''].join('\n');
  await appendFile(file, section);
  process.stdout.write(`${table}\n${notes.map((n) => `- ${n}`).join('\n')}\n(appended to docs/benchmarks.md)\n`);
}

/** Starts the sandbox in its own process (so its memory is not ours) and returns its URL and a dev token. */
export async function startSandboxProcess(dataDir: string): Promise<{ url: string; token: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `${root}src/sandbox/main.ts`], {
    env: { ...process.env, SANDBOX_PORT: '0', SANDBOX_DATA_DIR: dataDir, SANDBOX_MAX_UPLOAD_BYTES: String(2 ** 31) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      const token = /dev API token:\s+(\S+)/.exec(out)?.[1];
      if (url && token) resolve({ url, token });
    });
    child.once('exit', (code) => reject(new Error(`sandbox exited (${code}): ${out}`)));
  });
  return {
    url,
    token,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
