/**
 * Archives a transaction that completed at the provider after its
 * transaction workflow had ended (or that no workflow ever owned): nothing
 * signed may end without an archive. Started by the transaction's inbox, or by
 * the transaction's run for a stray completion of an earlier transaction with
 * its referenceId (transaction/strays.ts), one per provider transaction (workflow id `esign-late-<transactionId>`): a run
 * that archived is never started again (activities/inbox.ts), one that did
 * not (the provider said not completed, or it failed) may be. Operators find
 * these with `EsignStatus = "completed_late"`.
 *
 * A refusal is not an end, as for a transaction (transaction/endings.ts): a ZIP refused by verification, or a 4xx on
 * the read or the download, leaves the run in `archive_invalid` with the reason (query `status`), told to the
 * integrator, until an operator fixes the cause and asks `retryArchive` (`esign retry-archive`): the provider had
 * its 200 and will not send the completion again.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  metricMeter,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import type { ArchiveResult, EsignTransactionResult } from '../src/definitions/transaction.js';
import {
  lateCompletionStatusQuery,
  lateRetryArchiveUpdate,
  type LateCompletionInput,
  type LateCompletionPhase,
  type LateCompletionResult,
  type LateCompletionStatus,
} from '../src/definitions/late-completion.js';
import { FailureType } from '../src/failures.js';
import { ARCHIVE, PROVIDER, REPORT, step } from './activity-options.js';
import { EsignId, EsignReferenceId, EsignStatus, EsignTransactionId } from '../src/definitions/search-attributes.js';
import { Clock } from './clock.js';
import { versioningBehavior } from './versioning.js';

type Described = Awaited<ReturnType<EsignActivities['describeTransaction']>>;

/** What the run knows of its transaction, which its query reads and its retries wait on. */
class LateArchive {
  phase: LateCompletionPhase = 'late_archiving';
  /** The provider's record, once read. */
  described: Described | undefined;
  /** Why the last attempt was refused (the failure type and reason), and that type. */
  problem: string | undefined;
  problemType: string = FailureType.ArchiveInvalid;
  refusals = 0;
  /** `retryArchive` requests the loop has not taken up yet. */
  retriesAsked = 0;
  result: LateCompletionResult | null = null;

  constructor(readonly transactionId: string) {}

  get referenceId(): string | null {
    return this.described ? (this.described.referenceId ?? this.transactionId) : null;
  }

  view(): LateCompletionStatus {
    return {
      phase: this.phase,
      transactionId: this.transactionId,
      referenceId: this.referenceId,
      esignId: this.described?.esignId || null,
      ...(this.phase === 'archive_invalid' && this.problem !== undefined ? { archiveProblem: this.problem } : {}),
      refusals: this.refusals,
      result: this.result,
    };
  }

  /** The validator of `retryArchive`: refuses it, with the reason, unless the run waits in `archive_invalid`. */
  refuseRetry(): void {
    if (this.phase !== 'archive_invalid') throw new Error(`late completion is ${this.phase}: only a refused archive can be retried`);
  }

  /** An operator's retry: the loop takes it up (it waits for nothing else in `archive_invalid`); answered with how it went. */
  async retry(): Promise<EsignTransactionResult> {
    const refusals = this.refusals;
    this.retriesAsked++;
    await condition(() => this.result !== null || this.refusals > refusals);
    if (this.result?.report) return this.result.report;
    if (this.result) {
      const why = `the provider says the transaction is ${this.result.providerStatus}: nothing to archive`;
      throw ApplicationFailure.nonRetryable(why, FailureType.TransactionFinished);
    }
    throw ApplicationFailure.nonRetryable(`refused again: ${this.problem ?? ''}`, this.problemType);
  }
}

/** A failure no retry of the activity changes (a refused ZIP, a 4xx): an operator's to fix. */
function refusal(err: unknown): ApplicationFailure | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable ? err.cause : undefined;
}

export async function esignLateCompletion(input: LateCompletionInput): Promise<LateCompletionResult> {
  const clock = new Clock();
  const late = new LateArchive(input.transactionId);
  setHandler(lateCompletionStatusQuery, () => late.view());
  setHandler(lateRetryArchiveUpdate, () => late.retry(), { validator: () => late.refuseRetry() });
  upsertSearchAttributes([
    { key: EsignTransactionId, value: input.transactionId },
    { key: EsignStatus, value: 'late_archiving' },
  ]);
  let archive: ArchiveResult | undefined;
  for (;;) {
    try {
      archive = await archiveOnce(input, late);
      break;
    } catch (err) {
      const refused = refusal(err);
      if (!refused) throw err;
      await hold(input, late, refused, clock);
      await condition(() => late.retriesAsked > 0);
      late.retriesAsked = 0;
      late.phase = 'late_archiving';
      upsertSearchAttributes([{ key: EsignStatus, value: 'late_archiving' }]);
      setCurrentDetails('');
    }
  }
  const described = late.described!;
  if (!archive) {
    late.phase = 'late_not_completed';
    upsertSearchAttributes([{ key: EsignStatus, value: 'late_not_completed' }]);
    log.warn('a completion was reported, but the provider says otherwise; nothing to archive', { providerStatus: described.status });
    return end(late, { status: 'not_completed', transactionId: input.transactionId, providerStatus: described.status, report: null });
  }
  const referenceId = late.referenceId!;
  late.phase = 'completed_late';
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
  } catch (err) {
    log.error('late completion could not be reported to the callback', { error: (err as Error).message });
  }
  return end(late, { status: 'archived', transactionId: input.transactionId, providerStatus: described.status, report });
}

/**
 * Reads the provider's record (once: a retry after a refused archive does not read it again), then downloads,
 * verifies and archives the ZIP. Undefined when the provider says the transaction is not completed.
 */
async function archiveOnce(input: LateCompletionInput, late: LateArchive): Promise<ArchiveResult | undefined> {
  if (!late.described) {
    late.described = await step(PROVIDER, 'Read the transaction that completed late').describeTransaction(input.transactionId);
    if (late.described.status === 'completed') {
      upsertSearchAttributes([
        { key: EsignReferenceId, value: late.referenceId! },
        { key: EsignId, value: late.described.esignId },
      ]);
    }
  }
  if (late.described.status !== 'completed') return undefined;
  return step(ARCHIVE, 'Download, verify and archive the late-signed ZIP').archiveCompletedDocuments({
    referenceId: late.referenceId!,
    transactionId: input.transactionId,
    esignId: late.described.esignId,
    // With the hashes of what the ended workflow uploaded, the archive checks the provider signed exactly that.
    documents: late.described.documents.map((d) => {
      const sha256 = input.originals?.[d.StoragePath];
      return { ...d, ...(sha256 ? { sha256 } : {}) };
    }),
    ...(input.archivePrefix ? { archivePrefix: input.archivePrefix } : {}),
  });
}

/** Nothing archived, for a reason an operator can fix: waits in `archive_invalid`, says why, tells the integrator. */
async function hold(input: LateCompletionInput, late: LateArchive, refused: ApplicationFailure, clock: Clock): Promise<void> {
  late.problemType = refused.type ?? FailureType.ArchiveInvalid;
  late.problem = `${late.problemType}: ${refused.message}`;
  late.refusals++;
  late.phase = 'archive_invalid';
  upsertSearchAttributes([{ key: EsignStatus, value: 'archive_invalid' }]);
  setCurrentDetails(`Archive refused, waiting for an operator: ${late.problem}`);
  metricMeter.createCounter('esign_archive_refused', 'archives', 'Completed ZIPs refused by verification').add(1);
  log.error('the late completion could not be archived: nothing archived; fix the cause, then retryArchive', { problem: late.problem });
  const referenceId = late.referenceId;
  if (!input.callbackUrl) return;
  // The transaction's event log is found by its referenceId, which only the provider's record gives.
  if (!referenceId) return log.warn('the integrator is not told of the refusal: the provider’s record was not read');
  try {
    await step(REPORT, 'Tell the integrator the late archive was refused').appendToEventLog({
      referenceId,
      callbackUrl: input.callbackUrl,
      event: {
        type: 'transaction.archive_invalid',
        // Its own keys: the owner's log may hold the transaction workflow's own refusals.
        key: `${input.transactionId}:transaction.archive_invalid:late:${late.refusals}`,
        occurredAt: clock.iso(),
        data: { referenceId, transactionId: input.transactionId, problem: late.problem },
      },
    });
  } catch (err) {
    log.error('the refused late archive could not be told to the integrator', { error: (err as Error).message });
  }
}

/** The result, once every retry waiting on it has its answer. */
async function end(late: LateArchive, result: LateCompletionResult): Promise<LateCompletionResult> {
  late.result = result;
  await condition(allHandlersFinished);
  return result;
}

// Auto-upgrade: under Worker Versioning a run moves to the deployment's current version at its next task, so a
// change to what this workflow records needs patched() (workflows/patches.ts, docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), esignLateCompletion);
