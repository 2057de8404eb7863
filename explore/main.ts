// `npm run explore -- --seeds N [--seed S] [--from S] [--lanes L] [--schedule file.json] [--no-shrink] [--workflows path] [--reuse share] [--bulk share] [--approvals share] [--operations scale]`
//
// Runs the interleaving explorer (explore/explore.ts; docs/reliability.md, "Interleaving explorer") over seeds
// from..from+N-1, prints seeds per second and the outcomes, and for each failing seed its schedule, shrunk, as
// JSON with the command that reproduces it. Exit status 1 when any seed failed.
import { availableParallelism } from 'node:os';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { describeSchedule } from './schedule.js';
import { describeCoverage, Explorer, type SeedOutcome } from './explore.js';
import { scheduleOf } from './regressions.js';
import { isClosedChannelRetry } from './closed-channel.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: process.env.EXPLORE_SEEDS ?? '200' },
    seed: { type: 'string' },
    from: { type: 'string', default: '1' },
    lanes: { type: 'string', default: String(Math.min(8, availableParallelism() * 3)) },
    schedule: { type: 'string' },
    shrink: { type: 'boolean', default: true },
    'max-shrink': { type: 'string', default: '3' },
    workflows: { type: 'string' },
    'bad-zips': { type: 'boolean' },
    /** The share of seeds that are `reuse` schedules (0 to 1; explore/schedule.ts). */
    reuse: { type: 'string' },
    /** The share of seeds that are `bulk` schedules. */
    bulk: { type: 'string' },
    /** The share of transactions whose input names approvers (0 to 1). */
    approvals: { type: 'string' },
    /** How often the operator's and the server's moves are drawn, as a multiple of their shares (0: never). */
    operations: { type: 'string', default: '1' },
    /** The share of schedules with legal holds and retention walks (0 to 1). */
    records: { type: 'string' },
    /** The share of schedules with writes to the provider that get no answer and land later (0 to 1). */
    'late-writes': { type: 'string' },
    /** The share of schedules with activity calls that take seconds of the workflow's time (0 to 1). */
    'slow-activities': { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
  allowNegative: true,
});
const count = Number(values.seeds);
const from = values.seed !== undefined ? Number(values.seed) : Number(values.from);
const lanes = Number(values.lanes);
if (![count, from, lanes].every(Number.isInteger) || count < 1 || lanes < 1) {
  console.error(
    'usage: npm run explore -- [--seeds <count>] [--seed <seed> | --from <seed>] [--lanes <servers>] [--schedule <file.json>] [--no-shrink] [--workflows <workflows/index.ts>] [--reuse <share>] [--bulk <share>] [--approvals <share>] [--operations <scale>] [--records <share>] [--late-writes <share>] [--slow-activities <share>]',
  );
  process.exit(2);
}

// The workflows log what the schedules make them do (a refused withdraw, a refused ZIP, a late completion), and the
// SDK warns that the test server is not a full server: the explorer's findings say what matters. --verbose shows
// the workflows' errors too.
Runtime.install({
  logger: new DefaultLogger('ERROR', (entry) => {
    if (values.verbose || entry.meta?.sdkComponent !== 'workflow') console.error(`[${entry.level}] ${entry.message}`, entry.meta ?? '');
  }),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  // The explorer stops its servers itself (below): a test server left behind would run on, orphaned.
  shutdownSignals: [],
});
const explorer = await Explorer.start({
  lanes: values.schedule || values.seed !== undefined ? 1 : lanes,
  ...(values.workflows ? { workflows: resolve(values.workflows) } : {}),
  ...(values['bad-zips'] !== undefined ? { badZips: values['bad-zips'] } : {}),
  ...(values.reuse !== undefined ? { reuse: Number(values.reuse) } : {}),
  ...(values.bulk !== undefined ? { bulk: Number(values.bulk) } : {}),
  ...(values.approvals !== undefined ? { approvals: Number(values.approvals) } : {}),
  operations: Number(values.operations),
  ...(values.records !== undefined ? { records: Number(values.records) } : {}),
  ...(values['late-writes'] !== undefined ? { lateWrites: Number(values['late-writes']) } : {}),
  ...(values['slow-activities'] !== undefined ? { slowActivities: Number(values['slow-activities']) } : {}),
  log: (line) => console.log(`  ${line}`),
});
// Interrupted or broken, the explorer still stops its time-skipping servers before it exits.
const stop = (code: number) => {
  void Promise.race([explorer.close(), new Promise((resolve) => setTimeout(resolve, 10_000))]).finally(() => process.exit(code));
};
process.once('SIGINT', () => stop(130));
process.once('SIGTERM', () => stop(143));
process.on('uncaughtException', (err) => {
  if (isClosedChannelRetry(err)) return;
  console.error(`the explorer broke: ${err.stack ?? String(err)}`);
  stop(1);
});
const reproduce = (seed: number) =>
  `npm run explore -- --seed ${seed}${values.workflows ? ` --workflows ${values.workflows}` : ''}${values['bad-zips'] ? ' --bad-zips' : ''}${values.reuse !== undefined ? ` --reuse ${values.reuse}` : ''}${values.bulk !== undefined ? ` --bulk ${values.bulk}` : ''}${values.approvals !== undefined ? ` --approvals ${values.approvals}` : ''}${values.operations !== '1' ? ` --operations ${values.operations}` : ''}`;

let failed: number;
try {
  if (values.schedule) {
    // One saved schedule (a regression, or a shrunk failure someone pasted into a file).
    const schedule = scheduleOf(JSON.parse(await readFile(values.schedule, 'utf8')) as unknown);
    console.log(describeSchedule(schedule));
    const { findings, observation, realMs } = await explorer.run(schedule, values.verbose ? (l) => console.log(`  ${l}`) : undefined);
    console.log(`ended ${observation.end.kind === 'result' ? observation.end.result.status : observation.end.kind} in ${realMs} ms`);
    for (const f of findings) console.log(`FAIL ${f.check}: ${f.detail}`);
    failed = findings.length > 0 ? 1 : 0;
  } else {
    const seeds = Array.from({ length: values.seed !== undefined ? 1 : count }, (_, i) => from + i);
    console.log(
      `exploring ${seeds.length} seed(s) from ${from} on ${explorer.lanes} time-skipping server(s); workflow offers ${JSON.stringify(explorer.workflow)}`,
    );
    const started = Date.now();
    let done = 0;
    const outcomes = await explorer.explore(seeds, (o) => {
      done++;
      if (values.verbose || values.seed !== undefined || o.findings.length > 0 || o.known.length > 0)
        console.log(
          `seed ${o.seed}: ${o.ended} in ${o.realMs} ms${o.findings.map((f) => `\n  FAIL ${f.check}: ${f.detail}`).join('')}` +
            o.known.map((f) => `\n  KNOWN (open defect ${f.defect}) ${f.check}: ${f.detail}`).join(''),
        );
      else if (done % 100 === 0) console.log(`${done} seeds, ${(done / ((Date.now() - started) / 1000)).toFixed(2)} seeds/s`);
    });
    const seconds = (Date.now() - started) / 1000;
    const ends = new Map<string, number>();
    for (const o of outcomes) ends.set(o.ended, (ends.get(o.ended) ?? 0) + 1);
    const failing = outcomes.filter((o) => o.findings.length > 0);
    failed = failing.length;
    console.log(
      `\n${outcomes.length} seeds in ${seconds.toFixed(1)} s: ${(outcomes.length / seconds).toFixed(2)} seeds/s on ${explorer.lanes} server(s); ` +
        `${failing.length} failing\nended: ${[...ends]
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}` +
        (explorer.clockLeaks > 0 ? `\nlanes replaced because the test server's clock stayed held: ${explorer.clockLeaks}` : ''),
    );
    console.log(describeCoverage(outcomes));
    const known = new Map<string, number[]>();
    for (const o of outcomes) for (const d of new Set(o.known.map((f) => f.defect))) known.set(d, [...(known.get(d) ?? []), o.seed]);
    for (const [defect, seeds] of known)
      console.log(`known open defect ${defect} (explore/regressions/${defect}.json) shown again by seed(s) ${seeds.join(', ')}`);
    if (values.seed !== undefined) console.log(describeSchedule(outcomes[0]!.schedule));
    for (const o of failing.slice(0, Number(values['max-shrink']))) await report(o);
    if (failing.length > Number(values['max-shrink']))
      console.log(`(${failing.length - Number(values['max-shrink'])} more failing seeds not shrunk)`);
  }
} finally {
  await explorer.close();
}
process.exit(failed > 0 ? 1 : 0);

async function report(o: SeedOutcome): Promise<void> {
  const first = o.findings[0]!;
  console.log(`\n--- seed ${o.seed} fails ${first.check}: ${first.detail}`);
  let schedule = o.schedule;
  if (values.shrink) {
    const shrunk = await explorer.shrink(o.schedule, first.check);
    schedule = shrunk.schedule;
    console.log(
      `shrunk in ${shrunk.runs} runs from ${o.schedule.steps.length} steps, ${o.schedule.faults.length} faults, ${o.schedule.late.length} late moves ` +
        `to ${schedule.steps.length}, ${schedule.faults.length}, ${schedule.late.length}:`,
    );
  }
  console.log(describeSchedule(schedule));
  console.log(JSON.stringify(schedule));
  console.log(
    `reproduce: ${reproduce(o.seed)}\n` +
      `or save the JSON line above as explore/regressions/<name>.json ({"name", "defect", "schedule"}) and run npm run explore -- --schedule explore/regressions/<name>.json`,
  );
}
