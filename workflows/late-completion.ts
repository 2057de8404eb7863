/**
 * Archives a transaction that completed at the provider after its
 * transaction workflow had ended (or that no workflow ever owned): nothing
 * signed may end without an archive. Started by the transaction's inbox, one
 * per provider transaction (workflow id `esign-late-<transactionId>`): a run
 * that archived is never started again (activities/inbox.ts), one that did
 * not (the provider said not completed, or it failed) may be. Operators find
 * these with `EsignStatus = "completed_late"`.
 */
import { log, patched, setWorkflowOptions, upsertSearchAttributes } from '@temporalio/workflow';
import type { EsignTransactionResult } from '../src/definitions/transaction.js';
import type { LateCompletionInput, LateCompletionResult } from '../src/definitions/late-completion.js';
import { ARCHIVE, PROVIDER, REPORT, step } from './activity-options.js';
import { EsignId, EsignReferenceId, EsignStatus, EsignTransactionId } from '../src/definitions/search-attributes.js';
import { Clock } from './clock.js';
import { LATE_EVENT_LOG_PATCH } from './patches.js';
import { versioningBehavior } from './versioning.js';

export async function esignLateCompletion(input: LateCompletionInput): Promise<LateCompletionResult> {
  const clock = new Clock();
  upsertSearchAttributes([
    { key: EsignTransactionId, value: input.transactionId },
    { key: EsignStatus, value: 'late_archiving' },
  ]);
  const described = await step(PROVIDER, 'Read the transaction that completed late').describeTransaction(input.transactionId);
  if (described.status !== 'completed') {
    upsertSearchAttributes([{ key: EsignStatus, value: 'late_not_completed' }]);
    log.warn('a completion was reported, but the provider says otherwise; nothing to archive', { providerStatus: described.status });
    return { status: 'not_completed', transactionId: input.transactionId, providerStatus: described.status, report: null };
  }
  const referenceId = described.referenceId ?? input.transactionId;
  upsertSearchAttributes([
    { key: EsignReferenceId, value: referenceId },
    { key: EsignId, value: described.esignId },
  ]);
  const archive = await step(ARCHIVE, 'Download, verify and archive the late-signed ZIP').archiveCompletedDocuments({
    referenceId,
    transactionId: input.transactionId,
    esignId: described.esignId,
    // With the hashes of what the ended workflow uploaded, the archive checks the provider signed exactly that.
    documents: described.documents.map((d) => {
      const sha256 = input.originals?.[d.StoragePath];
      return { ...d, ...(sha256 ? { sha256 } : {}) };
    }),
    ...(input.archivePrefix ? { archivePrefix: input.archivePrefix } : {}),
  });
  upsertSearchAttributes([{ key: EsignStatus, value: 'completed_late' }]);
  const report: EsignTransactionResult = {
    status: 'completed',
    referenceId,
    transactionId: input.transactionId,
    esignId: described.esignId,
    archive,
    reason:
      input.ownerOutcome === null
        ? 'completed at the provider; no transaction workflow waited for it'
        : `completed at the provider after the transaction workflow ended ${input.ownerOutcome}`,
    ...(input.originals ? { originals: input.originals } : {}),
  };
  try {
    // `transaction.completed_late`: the integrator learns it came after the workflow had ended, numbered in the
    // transaction's event log after its other events.
    if (patched(LATE_EVENT_LOG_PATCH)) {
      await step(REPORT, 'Report the late completion').recordCompletion({ result: report, late: true });
      if (input.callbackUrl) {
        await step(REPORT, 'Hand the late completion to the event log').appendToEventLog({
          referenceId,
          callbackUrl: input.callbackUrl,
          event: {
            type: 'transaction.completed_late',
            key: `${input.transactionId}:transaction.completed_late`,
            occurredAt: clock.iso(),
            data: { ...report },
          },
        });
      }
    } else {
      await step(REPORT, 'Report the late completion').recordCompletion({
        result: report,
        late: true,
        ...(input.callbackUrl ? { callbackUrl: input.callbackUrl } : {}),
      });
    }
  } catch (err) {
    log.error('late completion could not be reported to the callback', { error: (err as Error).message });
  }
  return { status: 'archived', transactionId: input.transactionId, providerStatus: described.status, report };
}

// Auto-upgrade: under Worker Versioning a run moves to the deployment's current version at its next task, so a
// change to this workflow still needs patched() (docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), esignLateCompletion);
