/**
 * The bulk send's steps: read its CSV once into pages in the store, start a page of transactions, count them,
 * cancel them, and write the result CSV. Each is safe to retry: a page's transactions have deterministic ids
 * (a start that finds one running or closed takes it), and every file is rewritten whole.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context, heartbeat } from '@temporalio/activity';
import {
  ApplicationFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
} from '@temporalio/client';
import { stringify } from 'csv-stringify/sync';
import { batchKeys, BULK_PAGE_ROWS, BULK_PRIORITY, type BatchCounts, type InvalidRow } from '../src/definitions/bulk.js';
import { EsignBatchId } from '../src/definitions/search-attributes.js';
import { cancelUpdate, type EsignTransactionResult } from '../src/definitions/transaction.js';
import { FailureType } from '../src/failures.js';
import { getEsignTransaction, InvalidTransactionInput, startEsignTransaction } from '../src/client/transactions.js';
import type { ObjectStore } from '../src/storage/object-store.js';
import { BatchFileError, checkHeader, parseBatchCsv, REFERENCE_COLUMN, referenceOf, splitCells, type BatchRow } from '../src/bulk/rows.js';
import { requestFor, templateColumns, type BulkTemplates } from '../src/bulk/template-rows.js';

export interface BulkDeps {
  /** Where batches' CSVs, pages and results are kept (ESIGN_TEMPLATE_STORE). */
  store?: ObjectStore;
  templates?: BulkTemplates;
  /** The transactions' task queue when the batch names none: the worker's own. */
  taskQueue: string;
}

interface StartedRow {
  line: number;
  referenceId?: string;
  error?: string;
}

export function createBulkActivities(deps: BulkDeps) {
  const need = () => {
    if (!deps.store || !deps.templates)
      throw ApplicationFailure.nonRetryable(
        'this worker has no template store (set ESIGN_TEMPLATE_STORE): bulk sends need one for their templates and files',
        FailureType.StoreNotConfigured,
      );
    return { store: deps.store, templates: deps.templates };
  };
  const invalid = (message: string) => ApplicationFailure.nonRetryable(message, FailureType.BatchInvalid);
  const readJson = async <T>(store: ObjectStore, key: string): Promise<T> => {
    const body = await store.get(key);
    if (!body) throw ApplicationFailure.nonRetryable(`${store.urlOf(key)} is missing`, FailureType.BatchInvalid);
    return JSON.parse(body.toString('utf8')) as T;
  };

  return {
    /** Checks the CSV's header against the template and writes its rows as pages: the only read of the whole file. */
    async prepareBatch(input: { batchId: string; template: string; csvKey: string }): Promise<{ rows: number; pages: number }> {
      const { store, templates } = need();
      const template = await templates.get(input.template).catch((err: unknown) => {
        throw invalid(`template ${input.template}: ${(err as Error).message}`);
      });
      const csv = await store.get(input.csvKey);
      if (!csv) throw invalid(`the batch's CSV is not in the store (${store.urlOf(input.csvKey)})`);
      let parsed: ReturnType<typeof parseBatchCsv>;
      try {
        parsed = parseBatchCsv(csv);
        checkHeader(parsed.header, templateColumns(template));
      } catch (err) {
        if (err instanceof BatchFileError) throw invalid(err.message);
        throw err;
      }
      const pages = Math.ceil(parsed.rows.length / BULK_PAGE_ROWS);
      for (let page = 0; page < pages; page++) {
        const rows = parsed.rows.slice(page * BULK_PAGE_ROWS, (page + 1) * BULK_PAGE_ROWS);
        await store.put(batchKeys.page(input.batchId, page), JSON.stringify(rows));
        heartbeat(page);
      }
      return { rows: parsed.rows.length, pages };
    },

    /**
     * Starts one transaction per row of a page, at the bulk priority with the batch as fairness key. A row that
     * cannot become a transaction is refused with its line and reason; the others start.
     */
    async startBatchPage(input: {
      batchId: string;
      template: string;
      page: number;
      callbackUrl?: string;
      signingDeadline?: string;
      reconcileInterval?: string;
      taskQueue?: string;
      rowsPerSecond?: number;
    }): Promise<{ started: number; invalid: InvalidRow[] }> {
      const { store, templates } = need();
      const { client } = Context.current();
      const template = await templates.get(input.template);
      const rows = await readJson<BatchRow[]>(store, batchKeys.page(input.batchId, input.page));
      const outcomes: StartedRow[] = [];
      // The batch's pace, row by row: a page started at once would be a burst of work beside interactive signing.
      const spacingMs = input.rowsPerSecond ? 1_000 / input.rowsPerSecond : 0;
      let nextAt = Date.now();
      for (const row of rows) {
        const waitMs = nextAt - Date.now();
        if (waitMs > 0) await sleep(waitMs, undefined, { signal: Context.current().cancellationSignal });
        const outcome = await startRow(client, template, row, input, deps.taskQueue);
        outcomes.push(outcome);
        // Behind the pace (a slow start), the next row goes at once but never two: no burst to catch up.
        if (outcome.referenceId !== undefined) nextAt = Math.max(nextAt + spacingMs, Date.now());
        heartbeat(row.line);
      }
      await store.put(batchKeys.started(input.batchId, input.page), JSON.stringify(outcomes));
      return {
        started: outcomes.filter((o) => o.referenceId !== undefined).length,
        invalid: outcomes.filter((o) => o.error !== undefined).map((o) => ({ line: o.line, reason: o.error! })),
      };
    },

    /** The batch's transactions by where they are, from visibility (about a second behind). */
    async batchCounts(input: { batchId: string }): Promise<BatchCounts> {
      const { client } = Context.current();
      const of = `EsignBatchId = '${input.batchId}' AND WorkflowType = 'esignTransaction'`;
      const count = async (where: string) => (await client.workflow.count(`${of} AND ${where}`)).count;
      // A run that continued as new is not an end: each transaction's ended run is counted once.
      const [inFlight, running, completed, failed, ended] = await Promise.all([
        count(`ExecutionStatus = 'Running' AND EsignStatus IN ('uploading', 'creating')`),
        count(`ExecutionStatus = 'Running'`),
        count(`ExecutionStatus = 'Completed' AND EsignStatus = 'completed'`),
        count(`ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut', 'Canceled')`),
        count(`ExecutionStatus NOT IN ('Running', 'ContinuedAsNew')`),
      ]);
      // Five counts are not one instant: never a negative figure.
      return {
        inFlight,
        waiting: Math.max(0, running - inFlight),
        completed,
        endedOtherwise: Math.max(0, ended - completed - failed),
        failed,
      };
    },

    /**
     * Asks every transaction the batch started to cancel: each withdraws unless someone signed (then it completes
     * and is archived). By the ids its pages recorded, not by visibility, which lags behind the last starts; each
     * cancel is accepted, not waited for (the batch follows the transactions to their ends).
     */
    async cancelBatchTransactions(input: { batchId: string; pages: number; reason: string }): Promise<{ asked: number }> {
      const { store } = need();
      const { client } = Context.current();
      let asked = 0;
      for (let page = 0; page < input.pages; page++) {
        const started = (await readJson<StartedRow[]>(store, batchKeys.started(input.batchId, page))).filter((r) => r.referenceId);
        for (let i = 0; i < started.length; i += 8) {
          const some = started.slice(i, i + 8);
          await Promise.all(some.map((r) => askToCancel(client, r.referenceId!, input.reason)));
          asked += some.length;
          heartbeat(page);
        }
      }
      return { asked };
    },

    /**
     * One line per row: its outcome, transaction, archive or error; rows a cancel kept from starting are
     * `not_started`. Written whole, so a retry replaces it.
     */
    async writeBatchResult(input: { batchId: string; pages: number; startedPages: number }): Promise<{ url: string; running: number }> {
      const { store } = need();
      const { client } = Context.current();
      const lines: string[][] = [['line', 'referenceId', 'outcome', 'transactionId', 'archive', 'error']];
      for (let page = input.startedPages; page < input.pages; page++) {
        for (const row of await readJson<BatchRow[]>(store, batchKeys.page(input.batchId, page)))
          lines.push([String(row.line), '', 'not_started', '', '', 'the batch was cancelled before this row started']);
      }
      for (let page = 0; page < input.startedPages; page++) {
        for (const row of await readJson<StartedRow[]>(store, batchKeys.started(input.batchId, page))) {
          if (!row.referenceId) {
            lines.push([String(row.line), '', 'invalid', '', '', row.error ?? '']);
            continue;
          }
          lines.push([String(row.line), row.referenceId, ...(await outcomeOf(client, row.referenceId))]);
        }
        heartbeat(page);
      }
      const [head, ...rows] = lines;
      rows.sort((a, b) => Number(a[0]) - Number(b[0]));
      const key = batchKeys.result(input.batchId);
      await store.put(key, stringify([head!, ...rows]));
      // Visibility said none runs; this read every row: the batch follows on while any still does.
      return { url: store.urlOf(key), running: rows.filter((r) => r[2] === 'running').length };
    },
  };
}

async function startRow(
  client: Client,
  template: Parameters<typeof requestFor>[0],
  row: BatchRow,
  batch: { batchId: string; callbackUrl?: string; signingDeadline?: string; reconcileInterval?: string; taskQueue?: string },
  workerQueue: string,
): Promise<StartedRow> {
  if (row.error) return { line: row.line, error: row.error };
  const columns = templateColumns(template);
  const ref = referenceOf(batch.batchId, row);
  const cells = splitCells(row, columns);
  if ('reason' in ref) return { line: row.line, error: ref.reason };
  if ('reason' in cells) return { line: row.line, error: cells.reason };
  const request = requestFor(template, ref.referenceId, cells, batch);
  if ('reason' in request) return { line: row.line, error: request.reason };
  let existing = false;
  try {
    await startEsignTransaction(client, request.input, {
      taskQueue: batch.taskQueue ?? workerQueue,
      batchId: batch.batchId,
      priority: { priorityKey: BULK_PRIORITY, fairnessKey: batch.batchId },
      onlyOnce: true,
    });
  } catch (err) {
    // Refused input is the row's fault; one that ran before (a page started again after a crash) is the row's if
    // the batch started it; anything else (Temporal unreachable) is retried by the activity.
    if (err instanceof InvalidTransactionInput) return { line: row.line, error: err.message };
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    existing = true;
  }
  // A referenceId the row chose, or found taken, may belong to a transaction outside the batch: not this row's.
  if (existing || row.cells[REFERENCE_COLUMN] !== undefined) {
    const owner = (await getEsignTransaction(client, ref.referenceId).describe()).typedSearchAttributes.get(EsignBatchId);
    if (owner !== batch.batchId)
      return { line: row.line, error: `referenceId "${ref.referenceId}" is already used by another transaction` };
  }
  return { line: row.line, referenceId: ref.referenceId };
}

/** outcome, transactionId, archive, error of a row's transaction. */
async function outcomeOf(client: Client, referenceId: string): Promise<[string, string, string, string]> {
  const handle = getEsignTransaction(client, referenceId);
  const described = await handle.describe().catch(() => undefined);
  if (!described) return ['missing', '', '', 'no workflow for this row (deleted by retention?)'];
  if (described.status.name === 'RUNNING') return ['running', '', '', ''];
  try {
    const result: EsignTransactionResult = await handle.result();
    return [
      result.status,
      result.transactionId ?? '',
      result.archive?.uri ?? '',
      result.status === 'completed' ? '' : (result.reason ?? ''),
    ];
  } catch (err) {
    return ['failed', '', '', (err as Error).message];
  }
}

/** Asks one transaction to cancel, waiting until it accepted (not until it ended). Its refusal (signed, ended) is an answer. */
async function askToCancel(client: Client, referenceId: string, reason: string): Promise<void> {
  try {
    await getEsignTransaction(client, referenceId).startUpdate(cancelUpdate, {
      args: [{ reason }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) return;
    // Ended meanwhile: an update finds no running workflow to take it.
    if (/already completed/i.test((err as Error).message)) return;
    throw err;
  }
}
