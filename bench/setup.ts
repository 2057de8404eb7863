// What every scenario's setup shares: the Temporal dev server it runs on, the baseline workflows' bundle, and how
// many warm-up transactions it runs before measuring. Light on imports: the memory scenario's child loads it too.
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer, type DevServerOptions } from '../tools/temporal/dev-server.js';

/**
 * Warm-up transactions per path before a measurement (default 10, the figures' own). The bench smoke gives 0: its
 * figures mean nothing, and what it proves (every scenario runs and reports) needs no warm-up.
 */
export const WARMUP = Number(process.env.BENCH_WARMUP ?? 10);

/** A scenario's Temporal server: its address, and how to let go of it. */
export interface BenchTemporal {
  address: string;
  teardown(): Promise<void>;
}

/**
 * A fresh dev server for the scenario (the default: no scenario's figures carry another's history), or, when
 * `npm run bench` was given BENCH_ONE_DEV_SERVER=1 (the bench smoke), the run's one server, which run.ts starts
 * and passes on as BENCH_TEMPORAL_ADDRESS (to the processes the scenarios start too).
 */
export async function benchTemporal(options: DevServerOptions = {}): Promise<BenchTemporal> {
  const shared = process.env.BENCH_TEMPORAL_ADDRESS;
  if (shared) return { address: shared, teardown: async () => undefined };
  const server = await startDevServer(options);
  return { address: server.address, teardown: () => server.teardown() };
}

/** Starts the run's one dev server when BENCH_ONE_DEV_SERVER=1; a function that stops it. */
export async function startRunTemporal(): Promise<() => Promise<void>> {
  if (process.env.BENCH_ONE_DEV_SERVER !== '1' || process.env.BENCH_TEMPORAL_ADDRESS) return async () => undefined;
  const server = await startDevServer();
  process.env.BENCH_TEMPORAL_ADDRESS = server.address;
  return async () => {
    delete process.env.BENCH_TEMPORAL_ADDRESS;
    await server.teardown();
  };
}

export const baselineWorkflowsPath = new URL('./baseline-workflows.ts', import.meta.url).pathname;

let baseline: Promise<string> | undefined;
/**
 * Baseline T's workflows, bundled once per run (the bundle's path, removed when the run ends): the e2e scenario's
 * baseline worker and the memory scenario's baseline variant load the same code, rather than each bundling it at its
 * start, before anything is measured.
 */
export function baselineBundle(): Promise<string> {
  baseline ??= (async () => {
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    const { code } = await bundleWorkflowCode({ workflowsPath: baselineWorkflowsPath, logger: quiet });
    const dir = await mkdtemp(join(tmpdir(), 'bench-baseline-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'baseline-bundle.js');
    await writeFile(path, code);
    return path;
  })();
  return baseline;
}
