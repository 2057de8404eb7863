/**
 * `esign bulk send|status|cancel`: a batch from a template and a CSV (docs/bulk-send.md). Registered by main.ts;
 * the work is in the client helper (src/client/bulk.ts), the same a backend calls.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { BatchEnded, batchProgress, cancelBatch, sendBulk } from '../client/bulk.js';
import { DEFAULT_ROWS_PER_SECOND, MIN_ROWS_PER_SECOND, type BatchProgress } from '../definitions/bulk.js';
import { BatchFileError } from '../bulk/rows.js';
import { objectStoreAt } from '../storage/s3-object-store.js';
import { templateStoreAt, templateStoreSetting } from '../templates/index.js';
import { CliError, Exit, type CliContext, type CliKit } from './context.js';
import { fields } from './output.js';

/** The store of templates and batch files: ESIGN_TEMPLATE_STORE, or the dev stack's under its data folder. */
function stores(ctx: CliContext) {
  const setting = templateStoreSetting({ ESIGN_TEMPLATE_STORE: join(ctx.dataDir, 'templates'), ...process.env })!;
  return { objects: objectStoreAt(setting), templates: templateStoreAt(setting) };
}

/** `[########------------] 40 %` and the counts behind it. */
export function progressLine(p: BatchProgress, width = 30): string {
  const ended = p.completed + p.endedOtherwise + p.failed;
  const total = Math.max(1, p.rows - p.invalid);
  const filled = Math.round((Math.min(ended, total) / total) * width);
  return (
    `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor((Math.min(ended, total) / total) * 100)} % ` +
    `${p.phase}: ${ended} of ${total} done (${p.completed} signed, ${p.endedOtherwise} ended otherwise, ${p.failed} failed), ` +
    `${p.inFlight} in flight, ${p.waiting} waiting for signers, ${p.invalid} invalid row(s)`
  );
}

export function registerBulkCommands(program: Command, kit: CliKit): void {
  const bulk = program.command('bulk').description('send one template to many people from a CSV, and follow the batch');

  bulk
    .command('send')
    .description("start a batch: one transaction per CSV row (header: the template's roles and merge fields; optional referenceId)")
    .requiredOption('--template <name@version>', 'the template (name alone: its latest version)')
    .requiredOption('--csv <file>', 'the rows')
    .option('--name <name>', "the batch's name (default: the CSV file's name); with the template and the file it makes the batch id")
    .option('--max-in-flight <n>', 'transactions being created at the provider at once', (v) => Number.parseInt(v, 10), 50)
    .option('--rate <rows-per-second>', `rows started per second at most (default ${DEFAULT_ROWS_PER_SECOND})`, Number.parseFloat)
    .option('--callback-url <url>', 'the integrator endpoint every transaction reports to')
    .option('--deadline <duration>', 'signing deadline of every transaction, e.g. "14 days"')
    .action(
      async (o: {
        template: string;
        csv: string;
        name?: string;
        maxInFlight: number;
        rate?: number;
        callbackUrl?: string;
        deadline?: string;
      }) => {
        if (!Number.isInteger(o.maxInFlight) || o.maxInFlight < 1)
          throw new CliError('--max-in-flight must be a whole number of at least 1', Exit.usage);
        if (o.rate !== undefined && !(o.rate >= MIN_ROWS_PER_SECOND))
          throw new CliError(`--rate must be a number of rows per second of at least ${MIN_ROWS_PER_SECOND}, e.g. --rate 2`, Exit.usage);
        const csv = await readFile(o.csv).catch((err: NodeJS.ErrnoException) => {
          throw new CliError(`cannot read ${o.csv}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, Exit.usage);
        });
        const submitted = await kit.withContext((ctx) =>
          sendBulk(ctx.client, stores(ctx), {
            name: o.name ?? o.csv.replace(/^.*\//, '').replace(/\.csv$/i, ''),
            template: o.template,
            csv,
            maxInFlight: o.maxInFlight,
            ...(o.rate !== undefined ? { rowsPerSecond: o.rate } : {}),
            taskQueue: ctx.taskQueue,
            ...(o.callbackUrl ? { callbackUrl: o.callbackUrl } : {}),
            ...(o.deadline ? { signingDeadline: o.deadline } : {}),
          }).catch((err: unknown) => {
            if (err instanceof BatchFileError) throw new CliError(err.message, Exit.usage);
            throw err;
          }),
        );
        const { handle: _handle, ...shown } = submitted;
        kit.print(shown, () =>
          fields({
            batchId: submitted.batchId,
            template: submitted.template,
            rows: submitted.rows,
            ...(submitted.existing ? { note: 'submitted before: nothing new was started' } : {}),
            next: `npx esign bulk status ${submitted.batchId} --watch`,
          }),
        );
      },
    );

  bulk
    .command('status <batchId>')
    .description('how far a batch is: rows started, transactions in flight, signed, ended otherwise, failed, invalid rows')
    .option('--watch', 'refresh every 2 seconds until the batch has ended')
    .action(async (batchId: string, o: { watch?: boolean }) => {
      await kit.withContext(async (ctx) => {
        for (;;) {
          const p = await batchProgress(ctx.client, batchId).catch((err: unknown) => {
            if ((err as Error).name === 'WorkflowNotFoundError') throw new CliError(`no batch ${batchId}`, Exit.notFound);
            throw err;
          });
          const ended = 'resultUrl' in p;
          if (!o.watch || kit.json() || ended) {
            kit.print(p, () =>
              [
                progressLine(p),
                ...(p.firstInvalid.length > 0 ? ['', ...p.firstInvalid.map((r) => `line ${r.line}: ${r.reason}`)] : []),
                ...(ended ? ['', `result: ${p.resultUrl}`] : []),
              ].join('\n'),
            );
            if (ended || !o.watch) return;
          } else {
            process.stdout.write(`\r${progressLine(p)}`);
          }
          await new Promise((r) => setTimeout(r, 2000));
        }
      });
    });

  bulk
    .command('cancel <batchId>')
    .description('stop starting rows and withdraw every transaction of the batch not yet signed (signed ones are archived)')
    .option('--reason <text>')
    .action(async (batchId: string, o: { reason?: string }) => {
      const p = await kit.withContext((ctx) =>
        cancelBatch(ctx.client, batchId, o.reason).catch((err: unknown) => {
          if (err instanceof BatchEnded) throw new CliError(err.message, Exit.failed);
          throw err;
        }),
      );
      kit.print(p, () => progressLine(p));
    });
}
