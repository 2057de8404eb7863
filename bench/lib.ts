import { MockActivityEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { machine, machineCpu, pool } from '../tools/support/measure.js';
import { projectRoot } from '../tools/support/launch.js';

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

/** Where runs are written: a git-ignored folder of reports, never docs/ (which holds the current figures only). */
export const REPORTS_DIR = `${projectRoot}reports/`;

/**
 * Appends a scenario's results to reports/benchmarks.md (or BENCH_REPORT_FILE, which the smoke test uses) with the
 * machine and the command that produced them, and the same as one JSON line to the `.jsonl` file beside it, for
 * tools. docs/benchmarks.md is written by hand from these, each figure with its command.
 */
export async function record(scenario: string, command: string, table: string, notes: string[] = []): Promise<void> {
  const file = process.env.BENCH_REPORT_FILE ?? `${REPORTS_DIR}benchmarks.md`;
  await mkdir(dirname(file), { recursive: true });
  const header =
    '# Benchmark runs\n\nAppended by `npm run bench` (one scenario: `npm run bench -- <name>`). Each run compares against baselines measured in the same run on the same machine.\n';
  const existing = await readFile(file, 'utf8').catch(() => '');
  if (!existing) await writeFile(file, header);
  const at = new Date().toISOString();
  const section = [
    ``,
    `## ${scenario}: ${at}`,
    ``,
    `Machine: ${machine()}  `,
    `Command: \`${command}\``,
    ``,
    table,
    ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');
  await appendFile(file, section);
  await appendFile(
    file.replace(/\.md$/, '') + '.jsonl',
    `${JSON.stringify({ scenario, at, machine: machine(), command, table, notes })}\n`,
  );
  process.stdout.write(`${table}\n${notes.map((n) => `- ${n}`).join('\n')}\n(appended to ${file})\n`);
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** An environment to run an activity in this process, logging through the runtime's logger (WARN in benchmarks, see run.ts). */
export function activityEnvironment(): MockActivityEnvironment {
  return new MockActivityEnvironment(undefined, { logger: Runtime.instance().logger });
}

/** The package's version: the folder its committed replay histories are in. */
export const CURRENT_VERSION = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

/** What one workflow run cost the server: history events and the tasks and messages among them. */
export interface HistoryCounts {
  events: number;
  workflowTasks: number;
  activities: number;
  localActivities: number;
  /** `patched` markers, each with the SDK's upsert of TemporalChangeVersion beside it. */
  patches: number;
  timers: number;
  signals: number;
  updates: number;
}

/** Counts a finished workflow's history (the round trips the shape needs). */
export async function historyCounts(handle: { fetchHistory(): Promise<{ events?: object[] | null }> }): Promise<HistoryCounts> {
  return countsOf(((await handle.fetchHistory()).events ?? []) as Record<string, unknown>[]);
}

/**
 * The counts of a committed history (test/replay/histories/<version>/<file>, as `npm run replay:regenerate`
 * recorded it): what the same path cost on a released version, for a before/after line.
 */
export async function recordedHistoryCounts(version: string, file: string): Promise<HistoryCounts> {
  const path = join(projectRoot, 'test', 'replay', 'histories', version, file);
  return countsOf((JSON.parse(await readFile(path, 'utf8')) as { events: Record<string, unknown>[] }).events);
}

function countsOf(events: Record<string, unknown>[]): HistoryCounts {
  const count = (key: string) => events.filter((e) => e[key] !== undefined && e[key] !== null).length;
  const markers = (name: string) =>
    events.filter((e) => (e.markerRecordedEventAttributes as { markerName?: string } | undefined)?.markerName === name).length;
  return {
    events: events.length,
    workflowTasks: count('workflowTaskScheduledEventAttributes'),
    activities: count('activityTaskScheduledEventAttributes'),
    localActivities: markers('core_local_activity'),
    patches: markers('core_patch'),
    timers: count('timerStartedEventAttributes'),
    signals: count('workflowExecutionSignaledEventAttributes'),
    updates: count('workflowExecutionUpdateAcceptedEventAttributes'),
  };
}

export function describeCounts(c: HistoryCounts): string {
  return `${c.events} events: ${c.workflowTasks} workflow tasks, ${c.activities} activity tasks, ${c.localActivities} local activities, ${c.patches} patch markers, ${c.timers} timers, ${c.signals} signals, ${c.updates} updates`;
}

/** Median and spread (min–max) of repeated measurements, for figures reported from several runs. */
export function medianOf(xs: number[]): { median: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length === 0 ? NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}

export const describeSpread = (xs: number[], digits = 2) => {
  const m = medianOf(xs);
  return xs.length > 1 ? `${fmt(m.median, digits)} (${fmt(m.min, digits)}–${fmt(m.max, digits)})` : fmt(m.median, digits);
};

/** Each component's CPU seconds so far, by name (a process, or all of a command's processes). */
export type CpuComponents = Record<string, () => Promise<number>>;

/**
 * Runs `n` tasks, `concurrency` at a time, and measures them: the seconds they took, how busy the
 * machine was meanwhile (a share of all cores), and each component's CPU milliseconds per task.
 */
export async function measureTasks(
  n: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
  components: CpuComponents,
): Promise<{ seconds: number; busy: number; cpuPerTask: Record<string, number> }> {
  const snapshot = async () => {
    const out: Record<string, number> = {};
    for (const [name, read] of Object.entries(components)) out[name] = await read();
    return out;
  };
  const [cpuBefore, machineBefore] = [await snapshot(), await machineCpu()];
  const t0 = performance.now();
  await pool(n, concurrency, task);
  const seconds = (performance.now() - t0) / 1000;
  const [cpuAfter, machineAfter] = [await snapshot(), await machineCpu()];
  return {
    seconds,
    busy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
    cpuPerTask: Object.fromEntries(Object.keys(components).map((k) => [k, ((cpuAfter[k]! - cpuBefore[k]!) * 1000) / n])),
  };
}
