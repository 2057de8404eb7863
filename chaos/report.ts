import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { machine } from '../tools/support/measure.js';
import type { ChaosReport } from './run-chaos.js';

const list = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';

/** Where the transactions ran across the workers' rolling deploy, and how long the old version took to drain. */
function deployRow(r: ChaosReport): string {
  const { deploy: d, versions: v } = r;
  if (d.currentAt === undefined || !v) return `${d.from} → ${d.to} did not happen${d.failure ? `: ${d.failure}` : ''}`;
  const seconds = (n: number | null) => (n === null ? 'never' : `${n.toFixed(1)} s`);
  return (
    `${d.from} → ${d.to} of deployment ${d.deployment}, current (on every partition, confirmed by ${d.routingConfirmedBy}) after ${d.startedBefore} transactions had started; ` +
    `transactions on ${d.from} only ${v.transactions.onOld}, on ${d.to} only ${v.transactions.onNew}, ` +
    `moved at a continue-as-new ${v.transactions.moved} (runs: ${v.runs.onOld} on ${d.from}, ${v.runs.onNew} on ${d.to}); ` +
    `${d.from} drained ${seconds(v.drainSeconds)} after ${d.to} became current, its workers stopped at ${seconds(v.stopSeconds)}. ` +
    `Each run on one version, every transaction started after the switch on ${d.to}, no ${d.from} run open when its workers stopped`
  );
}

/** The bulk-send batch: its rows, how they ended, and that it ran once. */
function batchRow(r: ChaosReport): string {
  const b = r.batch;
  if (!b) return 'never submitted';
  const where =
    b.runs > 1
      ? `, in ${b.runs} runs (${b.versions.join(' → ')}, moved at a continue-as-new)`
      : b.versions.length
        ? ` on ${b.versions[0]}`
        : '';
  return (
    `${b.rows} rows (${b.batchId}) submitted after ${b.submittedAfter} transactions had started, and submitted again; ${b.phase} after ${b.seconds.toFixed(1)} s: ` +
    `${b.completed} rows completed in its result CSV, ${b.archived} of them archived once where the CSV says, ${b.duplicates} duplicate provider transactions; ` +
    `one batch workflow for its id${where}`
  );
}

/** The report of a run as markdown: what was broken, what was checked, and the verdict. */
export function formatReport(r: ChaosReport, command: string): string {
  const all = r.transactions + (r.batch?.rows ?? 0);
  const verdict = r.problems.length === 0 ? '**Clean**: nothing lost, nothing duplicated.' : `**${r.problems.length} problem(s)**`;
  return [
    `Run ${new Date().toISOString()} on ${machine()}  `,
    `Command: \`${command}\``,
    '',
    verdict,
    '',
    '| | |',
    '|---|---|',
    `| topology | ${r.topology === 'cluster' ? 'PostgreSQL and the Temporal services as separate processes, two bridges behind a round-robin balancer (docs/cluster.md)' : 'the Temporal dev server (SQLite)'} |`,
    `| transactions | ${r.transactions} driven at concurrency ${r.concurrency}${r.batch ? ` and ${r.batch.rows} of a bulk-send batch` : ''}, seed ${r.seed}, ${r.seconds.toFixed(1)} s |`,
    `| start → archived | p50 ${r.durations.p50.toFixed(1)} s, slowest ${r.durations.max.toFixed(1)} s (${r.durations.slowest}) |`,
    `| outcomes | ${list(r.outcomes)}, each the one its scenario allows and matching the provider's final state |`,
    `| completed | ${r.completed} of ${all} (${r.completedBy.webhook} by webhook, ${r.completedBy.reconciliation} by reconciliation poll) |`,
    `| archives | ${r.archives}: one per transaction the provider completed, each byte-identical (SHA-256) to its ZIP |`,
    `| provider transactions | ${r.providerTransactions} for ${all} referenceIds |`,
    `| webhooks | ${r.webhooks.delivered} acknowledged by a bridge (${r.webhooks.ackedAndFoundInTemporal} found as signals in Temporal, ${r.webhooks.ackedStale} stale: after their workflow ended), ${r.webhooks.dropped} dropped, ${r.webhooks.pending} still pending, ${r.webhooks.failed} failed |`,
    `| faults injected by the sandbox | ${list(r.injected)} |`,
    `| chaos events | ${r.events.length}: ${r.events.map((e) => `${e.description} at ${e.at.toFixed(1)} s`).join('; ')} |`,
    `| processes killed / exited on their own | ${Object.entries(r.serviceRestarts)
      .map(([name, s]) => `${name} ${s.kills}/${s.unexpectedExits}`)
      .join(', ')} |`,
    `| rolling deploy | ${deployRow(r)} |`,
    `| bulk send | ${batchRow(r)} |`,
    `| activity retries (absorbed) | ${list(r.activityRetries)} |`,
    `| client retries (absorbed) | ${list(r.clientRetries)} |`,
    `| partial downloads left in scratch | ${r.stagingLeftovers} |`,
    `| events to the integrator | ${r.integratorEvents.distinct} distinct, ${r.integratorEvents.attempts} attempts, ${r.integratorEvents.unverified} unverified; each transaction's end heard once, each signature once |`,
    ...(r.problems.length ? ['', 'Problems:', '', ...r.problems.map((p) => `- ${p}`)] : []),
  ].join('\n');
}

/**
 * Writes a run to the git-ignored reports/ folder, never into docs/: `chaos.md` (or `chaos-cluster.md`) holds the
 * last run, and the `.jsonl` file beside it one line per run (the report as data), kept across runs.
 */
export async function writeRunReport(dir: string, name: string, markdown: string, report: unknown): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.md`);
  await writeFile(file, `${markdown}\n`);
  await appendFile(join(dir, `${name}.jsonl`), `${JSON.stringify({ at: new Date().toISOString(), report })}\n`);
  return file;
}
