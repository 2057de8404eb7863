// What the chaos run's bulk send (./bulk.ts) must prove, from the sources of truth: the batch ended `done` and its
// result CSV reports every row once, completed and archived; each row made exactly one provider transaction and
// one archive; one batch workflow exists for its id; and its own histories are as clean as a transaction's, its
// runs on the versions the deploy allows. The rows' transactions themselves go through ./checks.ts like the
// driven ones.
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@temporalio/client';
import { parse } from 'csv-parse/sync';
import type { ArchiveManifest } from '../src/archive/store.js';
import { batchKeys, BULK_WORKFLOW_TYPE, rowReferenceId, type BatchResult } from '../src/definitions/bulk.js';
import { WORKFLOW_TYPE } from '../src/definitions/transaction.js';
import type { EsignClient } from '../src/esign/client.js';
import type { ObjectStore } from '../src/storage/object-store.js';
import { checkHistory } from './checks.js';
import { runsOf, versionsOf } from './versions.js';
import type { RollingDeploy } from './workers.js';

/** What the driver (./bulk.ts) saw of the batch; `checkBatch` holds it against the sources of truth. */
export interface BatchRun {
  batchId: string;
  rows: number;
  /** Driven transactions started when it was submitted. */
  submittedAfter: number;
  /** What the two submissions answered, and how many attempts the first took (a lost answer makes a retry find it). */
  existing: [first: boolean, second: boolean];
  firstAttempts: number;
  /** The batch workflow's result, or why there is none. */
  result: BatchResult | Error;
  /** From the first submission to the batch workflow's close. */
  seconds: number;
}

export interface BatchChecks {
  batchId: string;
  rows: number;
  /** Driven transactions started when it was submitted. */
  submittedAfter: number;
  /** From the first submission to the batch workflow's close. */
  seconds: number;
  /** How the batch ended (`done`), or why it has no result. */
  phase: string;
  /** Rows the result CSV reports completed, and those whose archive is, once, where the CSV says. */
  completed: number;
  archived: number;
  /** Provider transactions of the batch beyond one per row (a row's second, or one no row owns). */
  duplicates: number;
  /** The batch workflow's runs (two when the deploy moved it at a continue-as-new) and the version of each. */
  runs: number;
  versions: string[];
}

interface BatchCheckInput {
  run: BatchRun;
  client: Client;
  provider: EsignClient;
  objects: ObjectStore;
  archiveDir: string;
  deploy?: RollingDeploy;
  /** The run's absorbed activity retries, to which the batch workflow's are added. */
  activityRetries: Record<string, number>;
  problems: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function checkBatch({
  run,
  client,
  provider,
  objects,
  archiveDir,
  deploy,
  activityRetries,
  problems,
}: BatchCheckInput): Promise<BatchChecks> {
  const { batchId, rows } = run;
  const say = (what: string) => problems.push(`batch ${batchId}: ${what}`);
  const lines = Array.from({ length: rows }, (_, i) => i + 2);
  const checks: BatchChecks = {
    batchId,
    rows,
    submittedAfter: run.submittedAfter,
    seconds: run.seconds,
    phase: run.result instanceof Error ? run.result.message : run.result.phase,
    completed: 0,
    archived: 0,
    duplicates: 0,
    runs: 0,
    versions: [],
  };

  // 1. Submitted twice, started once, and ended `done` with every row completed.
  if (!run.existing[1]) say('the second submission started it again');
  if (run.existing[0] && run.firstAttempts === 1) say('its first submission found it already submitted');
  if (run.result instanceof Error) say(run.result.message);
  else {
    const expected: Partial<BatchResult> = {
      phase: 'done',
      rows,
      started: rows,
      invalid: 0,
      completed: rows,
      endedOtherwise: 0,
      failed: 0,
    };
    for (const [key, value] of Object.entries(expected)) {
      const got = run.result[key as keyof BatchResult];
      if (got !== value) say(`its result has ${key} ${JSON.stringify(got)}, not ${JSON.stringify(value)}`);
    }
  }

  // 2. The result CSV: exactly one line per row of the submitted CSV, each completed with its transaction and archive.
  const csv = await objects.get(batchKeys.result(batchId));
  if (!csv) say(`no result CSV at ${objects.urlOf(batchKeys.result(batchId))}`);
  const reported = new Map<number, Record<string, string>[]>();
  for (const r of csv ? parse<Record<string, string>>(csv, { columns: true }) : []) {
    const line = Number(r.line);
    if (!lines.includes(line)) say(`the result CSV has a line for row ${r.line}, which the CSV lacks`);
    reported.set(line, [...(reported.get(line) ?? []), r]);
  }
  const rowOf = new Map<number, Record<string, string>>();
  for (const line of lines) {
    const entries = reported.get(line) ?? [];
    const r = entries[0];
    if (entries.length !== 1 || !r) say(`the result CSV has ${entries.length} lines for row ${line}`);
    else if (r.referenceId !== rowReferenceId(batchId, line)) say(`row ${line} is reported as ${r.referenceId}`);
    else if (r.outcome !== 'completed' || !r.transactionId || !r.archive)
      say(
        `row ${line} is reported ${r.outcome}${r.error ? ` (${r.error})` : ''}, transaction "${r.transactionId}", archive "${r.archive}"`,
      );
    else {
      rowOf.set(line, r);
      checks.completed++;
    }
  }

  // 3. Exactly one provider transaction per row, the one the result names; none the batch's that no row owns.
  const atProvider = new Map<string, string[]>();
  for (let offset = 0; ; offset += 500) {
    const page = await provider.listTransactions({ limit: 500, offset });
    for (const t of page.data)
      if (t.referenceId?.startsWith(`${batchId}.`)) atProvider.set(t.referenceId, [...(atProvider.get(t.referenceId) ?? []), t.id]);
    if (offset + page.data.length >= page.total || page.data.length === 0) break;
  }
  const owned = new Set(lines.map((line) => rowReferenceId(batchId, line)));
  for (const [referenceId, ids] of atProvider) {
    if (!owned.has(referenceId)) {
      say(`the provider holds ${ids.length} transaction(s) for ${referenceId}, which no row has`);
      checks.duplicates += ids.length;
    } else checks.duplicates += Math.max(0, ids.length - 1);
  }
  for (const line of lines) {
    const ids = atProvider.get(rowReferenceId(batchId, line)) ?? [];
    const reportedId = rowOf.get(line)?.transactionId;
    if (ids.length !== 1) say(`the provider holds ${ids.length} transactions for row ${line}`);
    else if (reportedId && reportedId !== ids[0]) say(`row ${line} is reported as transaction ${reportedId}, the provider's is ${ids[0]}`);
  }

  // 4. Each row's archive exactly once in the archive directory: its transaction's, where the result CSV says.
  const archivesOf = new Map<string, string[]>();
  for (const entry of await readdir(archiveDir).catch(() => [] as string[])) {
    if (entry === '.staging') continue;
    const manifest = await readFile(join(archiveDir, entry, 'manifest.json'), 'utf8').then(
      (text) => JSON.parse(text) as ArchiveManifest,
      () => undefined,
    );
    if (manifest?.referenceId.startsWith(`${batchId}.`))
      archivesOf.set(manifest.referenceId, [...(archivesOf.get(manifest.referenceId) ?? []), entry]);
  }
  for (const [line, r] of rowOf) {
    const dirs = archivesOf.get(r.referenceId!) ?? [];
    const where = pathToFileURL(join(resolve(archiveDir), r.transactionId!, 'completed.zip')).href;
    if (dirs.length !== 1) say(`row ${line} has ${dirs.length} archives (${dirs.join(', ') || 'none'})`);
    else if (dirs[0] !== r.transactionId) say(`row ${line}'s archive is ${dirs[0]}, not its transaction ${r.transactionId}'s`);
    else if (r.archive !== where) say(`row ${line} is reported archived at ${r.archive}, not ${where}`);
    else checks.archived++;
  }

  // 5. One batch workflow for the id (its continue-as-new runs being one), with one transaction workflow per row.
  const runs = await runsOf(client, batchId);
  checks.runs = runs.length;
  const count = async (query: string) => (await client.workflow.count(query)).count;
  const expected = { batches: 1, executions: runs.length, transactions: rows };
  const counted = async () => {
    const [batches, executions, transactions] = await Promise.all([
      count(`WorkflowId = '${batchId}' AND WorkflowType = '${BULK_WORKFLOW_TYPE}' AND ExecutionStatus != 'ContinuedAsNew'`),
      count(`WorkflowId = '${batchId}'`),
      count(`EsignBatchId = '${batchId}' AND WorkflowType = '${WORKFLOW_TYPE}' AND ExecutionStatus != 'ContinuedAsNew'`),
    ]);
    return { batches, executions, transactions };
  };
  // Visibility is updated after the fact: a count a moment after the end may still miss a run's close.
  let seen = await counted();
  for (let tries = 1; JSON.stringify(seen) !== JSON.stringify(expected) && tries < 15; tries++) {
    await sleep(1000);
    seen = await counted();
  }
  if (seen.batches !== 1) say(`visibility holds ${seen.batches} batch workflows for its id`);
  if (seen.executions !== runs.length) say(`visibility holds ${seen.executions} executions of its id, its chain ${runs.length} runs`);
  if (seen.transactions !== rows) say(`visibility holds ${seen.transactions} transaction workflows of the batch for ${rows} rows`);

  // 6. The batch's own histories, as a transaction's: no failed workflow task, no non-retryable activity failure,
  //    each run on one version, moving only forward at a continue-as-new.
  runs.forEach((r, i) => checkHistory(`${batchId} (run ${i + 1})`, r.events, activityRetries, problems));
  if (runs.length === 0) say('no history');
  if (deploy) checks.versions = versionsOf(deploy, batchId, runs, problems, { onOld: 0, onNew: 0 });
  return checks;
}
