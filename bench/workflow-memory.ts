// Scenario "memory": what one cached workflow costs the worker, for the
// baseline workflow (no imports beyond the SDK) and for ours. Each variant runs
// in a fresh process; the figures include the client's starts in that process,
// the same for every variant.
import { execFile } from 'node:child_process';
import { projectRoot } from '../tools/support/launch.js';
import { fmt, markdownTable, record } from './lib.js';
import { baselineBundle } from './setup.js';

const N = Number(process.env.BENCH_MEMORY_N ?? 500);

async function measure(variant: string): Promise<{ cached: number; rssPerWorkflowKiB: number; cpuMsPerWorkflow: number }> {
  // The baseline's code bundled once per run (bench/setup.ts), as e2e's baseline worker loads it.
  const env = { ...process.env, BENCH_BASELINE_BUNDLE: await baselineBundle() };
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', `${projectRoot}bench/workflow-memory-child.ts`, variant, String(N)],
      { timeout: 300_000, env },
      (err, stdout) => {
        const line = stdout.split('\n').find((l) => l.startsWith('{'));
        if (err || !line) return reject(err ?? new Error(`no result from ${variant}: ${stdout}`));
        resolve(JSON.parse(line) as { cached: number; rssPerWorkflowKiB: number; cpuMsPerWorkflow: number });
      },
    ),
  );
}

export async function workflowMemory(command: string): Promise<void> {
  const rows = [];
  for (const [variant, what] of [
    ['baseline', 'baseline: same shape as the transaction, SDK imports only'],
    ['inbox', 'esignInbox (waiting for its owner)'],
    ['transaction', 'esignTransaction (waiting for signatures)'],
  ] as const) {
    const m = await measure(variant);
    rows.push({
      workflow: what,
      'cached workflows': m.cached,
      'RSS per cached workflow (KiB)': fmt(m.rssPerWorkflowKiB, 0),
      'CPU per workflow started (ms)': fmt(m.cpuMsPerWorkflow, 1),
    });
  }
  await record('memory per cached workflow', command, markdownTable(rows), [
    `${N} workflows of each kind put in one worker's cache, each waiting; RSS after a forced GC, minus before, divided by ${N}.`,
    'A cached workflow holds its own instance of every module its code loads (reuseV8Context): what workflow code imports is paid per workflow.',
  ]);
}
