import { readFile } from 'node:fs/promises';
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
