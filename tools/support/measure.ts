import { readdir, readFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';

/** The machine a figure was measured on, as printed next to it. */
export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${process.platform}`;
}

/** CPU seconds used so far and peak RSS (VmHWM) of a child process, from /proc. */
export async function processUsage(pid: number): Promise<{ cpuSeconds: number; peakRssBytes: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]); // utime + stime, in clock ticks (100 Hz on Linux)
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  return { cpuSeconds: ticks / 100, peakRssBytes: hwm };
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

/** CPU seconds used so far by every process whose command name is `comm` (e.g. all of PostgreSQL's), from /proc. */
export async function commandCpuSeconds(comm: string): Promise<number> {
  let ticks = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    if (open < 0 || stat.slice(open + 1, close) !== comm) continue;
    const fields = stat.slice(close + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

/** Busy and total CPU time of the whole machine so far (all cores), from /proc/stat: their deltas give utilisation. */
export async function machineCpu(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const [, ...values] = line.trim().split(/\s+/);
  const n = values.map(Number);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  const total = n.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}
