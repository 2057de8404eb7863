/**
 * The bulk-send workflow's public names: its type, id, input, progress and result, and the messages it accepts.
 * One batch starts one transaction per row of a CSV, from one template (docs/bulk-send.md).
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

export const BULK_WORKFLOW_TYPE = 'esignBulkSend';

/** Bulk transactions queue behind interactive ones (priority 3, the default): lower numbers go first. */
export const BULK_PRIORITY = 4;

/** Rows per page: what one activity reads and starts, and what a page file in the store holds. */
export const BULK_PAGE_ROWS = 25;

/** The slowest pace a batch may ask for: a page of rows must start within its activity's five minutes. */
export const MIN_ROWS_PER_SECOND = 0.1;

/**
 * A batch's pace unless it asks for another: 3,600 rows an hour, which kept interactive signing within its goal
 * beside a batch on the benchmark's 2-core machine, where 2 a second did not (docs/benchmarks.md). A bigger
 * machine or provider can take more.
 */
export const DEFAULT_ROWS_PER_SECOND = 1;

export interface BulkSendInput {
  /** The batch's id (also its workflow id): from its name and content, so submitting it again starts nothing twice. */
  batchId: string;
  name: string;
  /** `name@version`, resolved by the client before the start: a batch never changes template under way. */
  template: string;
  /** The submitted CSV's key in the store. */
  csvKey: string;
  /** At most this many of its transactions are being created at the provider at once (uploading or creating). */
  maxInFlight: number;
  /**
   * At most this many rows started per second (none, in a batch submitted before the pace existed: as fast as
   * `maxInFlight` allows). What keeps a batch from taking the CPU and the provider's rate from interactive
   * signing: each row started costs work long after its creation (docs/bulk-send.md).
   */
  rowsPerSecond?: number;
  /** Passed to every transaction of the batch. */
  callbackUrl?: string;
  signingDeadline?: string;
  /** How often each transaction polls the provider in case a webhook is lost (the template's default otherwise). */
  reconcileInterval?: string;
  /** The transactions' task queue (the batch's own by default). */
  taskQueue?: string;
}

/** What the batch carries across continue-as-new. */
export interface BulkSendCarried {
  rows: number;
  pages: number;
  nextPage: number;
  started: number;
  invalid: number;
  /** The first invalid rows, for the progress line and `esign bulk status` (all of them are in the result CSV). */
  firstInvalid: InvalidRow[];
  cancelRequested: boolean;
  cancelsSent: boolean;
  runs: number;
}

export interface InvalidRow {
  /** The row's line in the CSV (the header is line 1). */
  line: number;
  reason: string;
}

/** Counts of the batch's transactions as visibility sees them (about a second behind). */
export interface BatchCounts {
  /** Being uploaded or created at the provider: what `maxInFlight` bounds. */
  inFlight: number;
  /** Waiting for signers (drafts, awaiting signatures, overdue) or being archived. */
  waiting: number;
  completed: number;
  /** Ended otherwise: declined, expired, cancelled, deleted at the provider. */
  endedOtherwise: number;
  /** Workflows that failed or were terminated (an operator's attention). */
  failed: number;
}

export type BatchPhase = 'preparing' | 'sending' | 'cancelling' | 'following' | 'reporting' | 'done' | 'cancelled';

export interface BatchProgress extends BatchCounts {
  batchId: string;
  phase: BatchPhase;
  rows: number;
  /** Rows handed to a transaction so far, and rows refused (each with its line and reason in the result). */
  started: number;
  invalid: number;
  firstInvalid: InvalidRow[];
}

export interface BatchResult extends BatchProgress {
  /** The result CSV: one line per row with its outcome, transaction, archive or error. */
  resultUrl: string;
}

/** The bulk-send workflow as clients start and await it: its type without its code (workflows/bulk-send.ts checks it fits). */
export type BulkSendWorkflow = (input: BulkSendInput) => Promise<BatchResult>;

export const batchProgressQuery = defineQuery<BatchProgress>('progress');
/** Stops starting rows and withdraws every transaction not yet signed; signed ones are archived. Answers once the cancels are sent. */
export const cancelBatchUpdate = defineUpdate<BatchProgress, [{ reason?: string }]>('cancelBatch');

/** Store keys of a batch (docs/bulk-send.md lists them). */
export const batchKeys = {
  page: (batchId: string, page: number) => `bulk/${batchId}/rows/${String(page).padStart(6, '0')}.json`,
  started: (batchId: string, page: number) => `bulk/${batchId}/started/${String(page).padStart(6, '0')}.json`,
  result: (batchId: string) => `bulk/${batchId}/result.csv`,
  upload: (sha256: string) => `bulk/uploads/${sha256}.csv`,
};

/** What a batch id looks like (from `batchIdFor`): safe inside a visibility query and a reference id. */
export const BATCH_ID = /^bulk-[a-z0-9-]{1,60}$/;

/** The reference of row `line` of a batch (no personal data: ids only). */
export function rowReferenceId(batchId: string, line: number): string {
  return `${batchId}.${line}`;
}
