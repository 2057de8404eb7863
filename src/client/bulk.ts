/**
 * Bulk send from a backend or the CLI: submit a batch (a template and a CSV), follow it, cancel it. The CSV goes
 * to the store, never through workflow input; the batch's id comes from its name, template and file, so a
 * second submission of the same batch starts nothing (it returns the first).
 */
import { assertWorkersDecrypt } from './codec-check.js';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import {
  BATCH_ID,
  batchKeys,
  batchProgressQuery,
  BULK_PRIORITY,
  BULK_WORKFLOW_TYPE,
  cancelBatchUpdate,
  DEFAULT_ROWS_PER_SECOND,
  MIN_ROWS_PER_SECOND,
  type BatchProgress,
  type BatchResult,
  type BulkSendInput,
  type BulkSendWorkflow,
} from '../definitions/bulk.js';
import { EsignBatchId, EsignStatus } from '../definitions/search-attributes.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import { batchIdFor, checkHeader, parseBatchCsv, sha256Hex } from '../bulk/rows.js';
import { templateColumns, type BulkTemplates } from '../bulk/template-rows.js';
import type { ObjectStore } from '../storage/object-store.js';

export interface BulkSendRequest {
  /**
   * A name people recognise (`Q3 NDAs`); with the template and the file, it makes the batch's id, which the server
   * keeps in clear (workflow ids, a search attribute): no personal data, as for a referenceId.
   */
  name: string;
  /** `NDA@3`, or `NDA` for its latest version (resolved now: the batch keeps that version). */
  template: string;
  csv: Buffer;
  /** Transactions being created at the provider at once (default 50). */
  maxInFlight?: number;
  /** Rows started per second at most (default 1, `DEFAULT_ROWS_PER_SECOND`); at least 0.1. */
  rowsPerSecond?: number;
  callbackUrl?: string;
  signingDeadline?: string;
  /** How often each transaction polls the provider in case a webhook is lost. */
  reconcileInterval?: string;
  /** The workers' task queue (the batch and its transactions). */
  taskQueue?: string;
}

export interface SubmittedBatch {
  batchId: string;
  handle: WorkflowHandle<BulkSendWorkflow>;
  /** True when this exact batch was submitted before: nothing new was started. */
  existing: boolean;
  rows: number;
  template: string;
}

/** Checks the batch (the template exists, the CSV's header fits it), stores the CSV and starts the batch once. */
export async function sendBulk(
  client: Client,
  stores: { objects: ObjectStore; templates: BulkTemplates },
  request: BulkSendRequest,
): Promise<SubmittedBatch> {
  // The name is part of the batch's id, its rows' ids and a search attribute, all in clear on the server.
  if (request.name.includes('@'))
    throw new RangeError('the batch name becomes part of its id, in clear: it may not hold an e-mail address or other personal data');
  if (request.maxInFlight !== undefined && !(Number.isInteger(request.maxInFlight) && request.maxInFlight >= 1))
    throw new RangeError(`maxInFlight must be a whole number of at least 1 (got ${request.maxInFlight})`);
  if (request.rowsPerSecond !== undefined && !(request.rowsPerSecond >= MIN_ROWS_PER_SECOND))
    throw new RangeError(`rowsPerSecond must be at least ${MIN_ROWS_PER_SECOND} (got ${request.rowsPerSecond})`);
  const template = await stores.templates.get(request.template);
  const { header, rows } = parseBatchCsv(request.csv);
  checkHeader(header, templateColumns(template));
  const sha256 = sha256Hex(request.csv);
  const csvKey = batchKeys.upload(sha256);
  await stores.objects.put(csvKey, request.csv);
  const batchId = batchIdFor(request.name, template.ref, sha256);
  const taskQueue = request.taskQueue ?? DEFAULT_TASK_QUEUE;
  const input: BulkSendInput = {
    batchId,
    name: request.name,
    template: template.ref,
    csvKey,
    maxInFlight: request.maxInFlight ?? 50,
    rowsPerSecond: request.rowsPerSecond ?? DEFAULT_ROWS_PER_SECOND,
    taskQueue,
    ...(request.callbackUrl ? { callbackUrl: request.callbackUrl } : {}),
    ...(request.signingDeadline ? { signingDeadline: request.signingDeadline } : {}),
    ...(request.reconcileInterval ? { reconcileInterval: request.reconcileInterval } : {}),
  };
  const submitted = { batchId, rows: rows.length, template: template.ref };
  const handle = getBatch(client, batchId);
  // Submitted before (running or ended): that batch is the answer. Two submissions racing here both reach the
  // start below, whose policies let only one of them start it.
  if (
    await handle.describe().then(
      () => true,
      (err: unknown) => {
        // Absent: start it. Any other error (Temporal restarting) is the caller's to retry, never "not there".
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    )
  )
    return { ...submitted, handle, existing: true };
  await assertWorkersDecrypt(client, taskQueue);
  try {
    await client.workflow.start<BulkSendWorkflow>(BULK_WORKFLOW_TYPE, {
      workflowId: batchId,
      taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      priority: { priorityKey: BULK_PRIORITY, fairnessKey: batchId },
      memo: { name: request.name, template: template.ref, rows: rows.length },
      typedSearchAttributes: [
        { key: EsignBatchId, value: batchId },
        { key: EsignStatus, value: 'batch_preparing' },
      ],
    });
    return { ...submitted, handle, existing: false };
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return { ...submitted, handle, existing: true };
  }
}

export function getBatch(client: Client, batchId: string): WorkflowHandle<BulkSendWorkflow> {
  if (!BATCH_ID.test(batchId)) throw new Error(`"${batchId}" is not a batch id (they look like bulk-<name>-<12 hex digits>)`);
  return client.workflow.getHandle<BulkSendWorkflow>(batchId);
}

/** Where the batch is: its live progress while it runs, its result once it has ended. */
export async function batchProgress(client: Client, batchId: string): Promise<BatchProgress | BatchResult> {
  const handle = getBatch(client, batchId);
  const { status } = await handle.describe();
  if (status.name === 'RUNNING') return handle.query(batchProgressQuery);
  return handle.result();
}

/** Stops starting rows and withdraws every transaction not yet signed (signed ones are archived); answers once asked. */
export async function cancelBatch(client: Client, batchId: string, reason?: string): Promise<BatchProgress> {
  const handle = getBatch(client, batchId);
  const { status } = await handle.describe();
  if (status.name !== 'RUNNING') {
    const ended = await handle.result().then(
      (r) => r.phase,
      () => status.name.toLowerCase(),
    );
    throw new BatchEnded(`the batch has ended (${ended}): nothing is left to cancel`);
  }
  return handle.executeUpdate(cancelBatchUpdate, { args: [reason ? { reason } : {}] });
}

/** A cancel for a batch that has already ended. */
export class BatchEnded extends Error {
  override readonly name = 'BatchEnded';
}
