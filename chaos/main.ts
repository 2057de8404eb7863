// `npm run chaos [-- --seed N --transactions M --concurrency C --batch-rows B --keep --cluster]`
import { parseArgs } from 'node:util';
import { projectRoot } from '../tools/support/launch.js';
import { formatReport, writeRunReport } from './report.js';
import { runChaos } from './run-chaos.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: process.env.CHAOS_SEED ?? String(Date.now() % 100_000) },
    transactions: { type: 'string', default: process.env.CHAOS_TRANSACTIONS ?? '200' },
    concurrency: { type: 'string' },
    'batch-rows': { type: 'string', default: process.env.CHAOS_BATCH_ROWS ?? '20' },
    keep: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
    'no-record': { type: 'boolean', default: false },
  },
});
const seed = Number(values.seed);
const transactions = Number(values.transactions);
const batchRows = Number(values['batch-rows']);
if (!Number.isInteger(seed) || !Number.isInteger(transactions) || transactions < 1 || !Number.isInteger(batchRows) || batchRows < 1) {
  console.error(
    'usage: npm run chaos -- [--seed <integer>] [--transactions <count>] [--concurrency <count>] [--batch-rows <count>] [--keep] [--cluster]',
  );
  process.exit(2);
}

const report = await runChaos({
  seed,
  transactions,
  batchRows,
  ...(values.concurrency ? { concurrency: Number(values.concurrency) } : {}),
  keep: values.keep,
  cluster: values.cluster,
});
const markdown = formatReport(
  report,
  `npm run chaos -- --seed ${seed} --transactions ${transactions} --batch-rows ${batchRows}${values.concurrency ? ` --concurrency ${values.concurrency}` : ''}${values.cluster ? ' --cluster' : ''}`,
);
process.stdout.write(`\n${markdown}\n`);
if (!values['no-record']) {
  const file = await writeRunReport(`${projectRoot}reports`, values.cluster ? 'chaos-cluster' : 'chaos', markdown, report);
  process.stdout.write(`\n(written to ${file})\n`);
}
process.exit(report.problems.length === 0 ? 0 : 1);
