/**
 * A bulk send's state and moves: what the workflow function does (workflows/bulk-send.ts) and what the progress
 * query, the cancel update and the Web UI's line read. Carried across continue-as-new whole.
 */
import { ApplicationFailure, condition, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { FailureType } from '../../src/failures.js';
import {
  BULK_PAGE_ROWS,
  type BatchCounts,
  type BatchPhase,
  type BatchProgress,
  type BulkSendCarried,
  type BulkSendInput,
  type InvalidRow,
} from '../../src/definitions/bulk.js';
import { EsignStatus } from '../../src/definitions/search-attributes.js';

/** Invalid rows kept for the progress line; every one is in the result CSV. */
const KEEP_INVALID = 20;
const MAX_EVENTS_PER_RUN = 2_000;

export class Batch {
  phase: BatchPhase;
  rows: number;
  pages: number;
  nextPage: number;
  started: number;
  invalid: number;
  firstInvalid: InvalidRow[];
  cancelRequested: boolean;
  cancelsSent: boolean;
  readonly runs: number;
  counts: BatchCounts = { inFlight: 0, waiting: 0, completed: 0, endedOtherwise: 0, failed: 0 };

  constructor(
    readonly input: BulkSendInput,
    carried: BulkSendCarried | undefined,
  ) {
    this.phase = carried ? 'sending' : 'preparing';
    this.rows = carried?.rows ?? 0;
    this.pages = carried?.pages ?? 0;
    this.nextPage = carried?.nextPage ?? 0;
    this.started = carried?.started ?? 0;
    this.invalid = carried?.invalid ?? 0;
    this.firstInvalid = carried?.firstInvalid ?? [];
    this.cancelRequested = carried?.cancelRequested ?? false;
    this.cancelsSent = carried?.cancelsSent ?? false;
    this.runs = (carried?.runs ?? 0) + 1;
  }

  moveTo(phase: BatchPhase): void {
    this.phase = phase;
    upsertSearchAttributes([{ key: EsignStatus, value: `batch_${phase}` }]);
    this.#show();
  }

  prepared(rows: number, pages: number): void {
    this.rows = rows;
    this.pages = pages;
    this.moveTo('sending');
  }

  /** Rows left to start, and no cancel asked. */
  get sending(): boolean {
    return this.nextPage < this.pages && !this.cancelRequested;
  }

  /** Whether another page may start: at most `maxInFlight` transactions being created at once (one page is let through when none are). */
  get roomForPage(): boolean {
    return this.counts.inFlight === 0 || this.counts.inFlight + this.pageRows() <= this.input.maxInFlight;
  }

  pageRows(): number {
    return Math.min(BULK_PAGE_ROWS, Math.max(0, this.rows - this.nextPage * BULK_PAGE_ROWS));
  }

  pageStarted(result: { started: number; invalid: InvalidRow[] }): void {
    this.nextPage++;
    this.started += result.started;
    this.invalid += result.invalid.length;
    this.firstInvalid = [...this.firstInvalid, ...result.invalid].slice(0, KEEP_INVALID);
    // Counted now, not at the next read: visibility is about a second behind.
    this.counts = { ...this.counts, inFlight: this.counts.inFlight + result.started };
    this.#show();
  }

  /** Takes a visibility count; whether any transaction moved since the last one. */
  applyCounts(counts: BatchCounts): boolean {
    const moved = (Object.keys(counts) as (keyof BatchCounts)[]).some((k) => counts[k] !== this.counts[k]);
    this.counts = counts;
    this.#show();
    return moved;
  }

  /** Visibility sees none of the batch's transactions running (the result decides whether that is so). */
  get noneRunning(): boolean {
    return this.counts.inFlight + this.counts.waiting === 0;
  }

  /**
   * The cancel update: answered once the batch's transactions were asked to withdraw. Only the loop asks them, and
   * it does so before it waits, before it hands over and before it ends (workflows/README.md, rules 1 and 2).
   */
  async cancel(): Promise<BatchProgress> {
    this.cancelRequested = true;
    this.#show();
    await condition(() => this.cancelsSent);
    return this.progress();
  }

  /** Refuses a cancel that comes too late to withdraw anything (the update's validator). */
  checkCancel(): void {
    if (this.phase === 'done' || this.phase === 'cancelled')
      throw ApplicationFailure.nonRetryable(
        `the batch has ended (${this.phase}): nothing is left to cancel`,
        FailureType.TransactionFinished,
      );
  }

  get cancelPending(): boolean {
    return this.cancelRequested && !this.cancelsSent;
  }

  progress(): BatchProgress {
    return {
      batchId: this.input.batchId,
      phase: this.phase,
      rows: this.rows,
      started: this.started,
      invalid: this.invalid,
      firstInvalid: this.firstInvalid,
      ...this.counts,
    };
  }

  historyFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= MAX_EVENTS_PER_RUN || info.targetWorkerDeploymentVersionChanged;
  }

  carry(): BulkSendCarried {
    return {
      rows: this.rows,
      pages: this.pages,
      nextPage: this.nextPage,
      started: this.started,
      invalid: this.invalid,
      firstInvalid: this.firstInvalid,
      cancelRequested: this.cancelRequested,
      cancelsSent: this.cancelsSent,
      runs: this.runs,
    };
  }

  /** The Web UI's line: how far the batch is, in numbers. */
  #show(): void {
    const { inFlight, waiting, completed, endedOtherwise, failed } = this.counts;
    const ended = completed + endedOtherwise + failed;
    setCurrentDetails(
      `${this.phase}: ${this.started} of ${this.rows} rows started, ${ended} done (${completed} signed, ${endedOtherwise} ended otherwise, ${failed} failed), ` +
        `${inFlight} in flight, ${waiting} waiting for signers, ${this.invalid} invalid${this.cancelRequested ? '; cancel asked' : ''}`,
    );
  }
}
