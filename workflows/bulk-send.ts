/**
 * One bulk send: a template and a CSV become one transaction per row.
 * prepare (the CSV checked against the template, split into pages in the store) -> send (a page at a time, at
 * most `maxInFlight` transactions being created at once, each at the bulk priority with the batch as fairness
 * key) -> follow (until every transaction has ended; a cancel withdraws what is not signed) -> report (the
 * result CSV in the store). Long batches continue as new with their cursor (docs/bulk-send.md).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  makeContinueAsNewFunc,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import {
  batchProgressQuery,
  cancelBatchUpdate,
  type BatchResult,
  type BulkSendCarried,
  type BulkSendInput,
} from '../src/definitions/bulk.js';
import { BULK, BULK_FILES, step } from './activity-options.js';
import { Batch } from './bulk/batch.js';
import { versioningBehavior } from './versioning.js';

/**
 * How long the sender waits for room under `maxInFlight`; while following, the wait after a count that saw
 * transactions move, growing to the longest when nothing moves (a batch waiting months for signers counts rarely,
 * one whose transactions are ending notices the last one within seconds).
 */
const ROOM_WAIT_MS = 2_000;
const MAX_FOLLOW_WAIT_MS = 10 * 60_000;

export async function esignBulkSend(input: BulkSendInput, carried?: BulkSendCarried): Promise<BatchResult> {
  const batch = new Batch(input, carried);
  setHandler(batchProgressQuery, () => batch.progress());
  setHandler(cancelBatchUpdate, (_request) => batch.cancel(), { validator: (_request) => batch.checkCancel() });
  const { batchId } = input;
  const counts = async () => batch.applyCounts(await step(BULK, 'Count the batch’s transactions').batchCounts({ batchId }));

  // ------------------------------------------------ 1. prepare: the only read of the whole file
  if (!carried) {
    batch.moveTo('preparing');
    const prepared = await step(BULK_FILES, 'Check the CSV against the template and split it into pages').prepareBatch({
      batchId,
      template: input.template,
      csvKey: input.csvKey,
    });
    batch.prepared(prepared.rows, prepared.pages);
  } else {
    batch.moveTo(batch.sending ? 'sending' : 'following');
  }

  // ------------------------------------------------ 2. send, a page at a time
  while (batch.sending) {
    if (batch.historyFull()) return handOver();
    await counts();
    // A cancel taken during the count: no page starts after it.
    if (!batch.sending) break;
    if (!batch.roomForPage) {
      await condition(() => batch.cancelRequested, ROOM_WAIT_MS);
      continue;
    }
    const page = batch.nextPage;
    batch.pageStarted(
      await step(BULK, `Start the transactions of page ${page + 1} of ${batch.pages}`).startBatchPage({
        batchId,
        template: input.template,
        page,
        ...(input.callbackUrl ? { callbackUrl: input.callbackUrl } : {}),
        ...(input.signingDeadline ? { signingDeadline: input.signingDeadline } : {}),
        ...(input.reconcileInterval ? { reconcileInterval: input.reconcileInterval } : {}),
        ...(input.taskQueue ? { taskQueue: input.taskQueue } : {}),
        ...(input.rowsPerSecond ? { rowsPerSecond: input.rowsPerSecond } : {}),
      }),
    );
  }

  // ------------------------------------------------ 3. follow every transaction to its end
  batch.moveTo('following');
  let wait = ROOM_WAIT_MS;
  for (;;) {
    if (batch.cancelPending) await sendCancels();
    const moved = await counts();
    wait = moved ? ROOM_WAIT_MS : Math.min(MAX_FOLLOW_WAIT_MS, Math.round(wait * 1.5));
    // A cancel taken during the count is served first: its update waits for it (workflows/README.md, rule 1).
    if (batch.cancelPending) continue;
    if (batch.noneRunning) {
      // ------------------------------------------------ 4. report, one line per row
      // Visibility says none runs, but it lags behind the last starts and forgets what retention deleted: the
      // result, which reads every row's transaction, decides. One still running sends the batch back to following.
      batch.moveTo('reporting');
      const written = await step(BULK_FILES, 'Write the result CSV').writeBatchResult({
        batchId,
        pages: batch.pages,
        startedPages: batch.nextPage,
      });
      if (written.running === 0 && !batch.cancelPending) {
        batch.moveTo(batch.cancelRequested ? 'cancelled' : 'done');
        await condition(allHandlersFinished);
        return { ...batch.progress(), resultUrl: written.url };
      }
      // Still running after all, or a cancel came: follow on, after the wait (which a pending cancel ends at once;
      // a hand-over sends its withdrawals first).
      batch.moveTo('following');
    }
    if (batch.historyFull()) return handOver();
    await condition(() => batch.cancelPending, wait);
  }

  /** The withdrawals a cancel asked for: what its update waits for, sent by the loop only. */
  async function sendCancels(): Promise<void> {
    batch.moveTo('cancelling');
    await step(BULK_FILES, 'Withdraw the batch’s unsigned transactions').cancelBatchTransactions({
      batchId,
      pages: batch.nextPage,
      reason: 'the bulk send was cancelled',
    });
    batch.cancelsSent = true;
    batch.moveTo('following');
  }

  async function handOver(): Promise<never> {
    // A cancel taken meanwhile (one accepted while the result was written, which sent the batch back to following)
    // is served here, never waited on: its update waits for the withdrawals, so a hand-over waiting for its update
    // would wait for ever. Once they are sent its update is answered, and the next run carries the cancel as sent.
    for (;;) {
      if (batch.cancelPending) await sendCancels();
      await condition(() => batch.cancelPending || allHandlersFinished());
      if (!batch.cancelPending) break;
    }
    // Pinned like a transaction: a new run starts on the deployment's current version when that changed.
    if (workflowInfo().targetWorkerDeploymentVersionChanged)
      return makeContinueAsNewFunc<typeof esignBulkSend>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(input, batch.carry());
    return continueAsNew<typeof esignBulkSend>(input, batch.carry());
  }
}

// Pinned: a batch lives as long as its slowest transaction; it moves to new code only at continue-as-new.
setWorkflowOptions(versioningBehavior('PINNED'), esignBulkSend);
