/**
 * The ways a transaction ends, each confirmed before it is reported: the
 * provider's state acted on (`follow`), a completion archived (or refused, and
 * then held for an operator), a withdraw that ends it or is refused and
 * followed, and the one `finish` that reports whatever the end.
 */
import { ActivityFailure, allHandlersFinished, ApplicationFailure, condition, log, metricMeter } from '@temporalio/workflow';
import type { TransactionState, WithdrawOutcome } from '../../activities/transactions.js';
import { ESIGN_COMPLETED_EVENT } from '../../src/esign/events.js';
import { FailureType } from '../../src/failures.js';
import { ARCHIVE, step } from '../activity-options.js';
import type { EsignOutcome, EsignTransactionResult } from '../../src/definitions/transaction.js';
import { buildUpdateRequest } from '../requests.js';
import type { Integrator } from './integrator.js';
import type { CancelAttempt, SigningTransaction } from './machine.js';
import { providerRefusal, readAfterNotFound, type Gone, type Steps } from './steps.js';
import { keptWith } from './view.js';
import { handOnAfterEnd } from './strays.js';
type Ending = Promise<EsignTransactionResult | undefined>;
type State = Pick<TransactionState, 'status' | 'participants'>;
/** A cancel's answer when the provider completed the transaction meanwhile. */
const COMPLETING = {
  type: FailureType.TransactionFinished,
  message: 'the transaction has completed at the provider; it is being archived',
};

export class Endings {
  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
    private readonly integrator: Integrator,
  ) {}

  /**
   * Acts on the provider's state, however it was read. A completion read by
   * the confirmation is archived; one read elsewhere is confirmed first (the
   * loop's next step). Returns the result when the transaction ended.
   */
  async follow(state: State | Gone, confirmed = false): Ending {
    if (!('gone' in state)) this.integrator.applyProgress(state.participants);
    const seen = this.tx.observe(state);
    if (seen.kind === 'open') return undefined;
    if (seen.kind === 'completed' && !confirmed) {
      this.tx.notified = ESIGN_COMPLETED_EVENT;
      return undefined;
    }
    return this.#settle(state);
  }

  /** Ends as the provider's state says, when it has ended; archives a completion first. */
  async #settle(state: State | Gone): Ending {
    switch (state.status) {
      case 'completed':
        if (this.tx.cancel && !this.tx.cancel.refused) {
          // Accepted while the completion was being confirmed: it is answered now, not after the archive.
          this.tx.cancel.refused = COMPLETING;
          this.tx.cancel = undefined;
        }
        this.tx.moveTo('archiving');
        return this.archive();
      case 'declined': {
        const decliner = state.participants?.find((p) => p.status === 'declined');
        return this.ended('declined', decliner?.reason ?? 'a participant declined to sign', 'signer', {
          ...(decliner ? { declinedBy: { participantId: decliner.id, name: this.tx.nameOf(decliner.id) } } : {}),
        });
      }
      case 'cancelled':
        return this.ended('cancelled', 'the provider reports the transaction cancelled', 'provider');
      case 'expired':
        return this.ended('expired', 'the provider reports the transaction expired', 'provider');
      case 'deleted':
        return this.ended(
          'deleted',
          'gone' in state ? 'the provider no longer has the transaction (HTTP 404)' : 'the provider reports the transaction deleted',
          'provider',
        );
      default:
        return undefined;
    }
  }

  /**
   * Downloads, verifies and archives the completed ZIP. A ZIP that fails
   * verification is not an end: the provider holds a completed transaction we
   * could not archive, so the workflow waits in `archive_invalid` for an
   * operator to fix the cause and ask `retryArchive`, and tells the integrator.
   */
  async archive(): Ending {
    const { tx } = this;
    const input = tx.input!;
    const { transactionId, esignId } = tx.created!;
    try {
      const archive = await step(ARCHIVE, 'Download, verify and archive the signed ZIP').archiveCompletedDocuments({
        referenceId: input.referenceId,
        transactionId,
        esignId,
        documents: tx.request!.documents.map((d) => {
          const sha256 = tx.originals[d.StoragePath];
          return { title: d.title, StoragePath: d.StoragePath, ...(sha256 ? { sha256 } : {}) };
        }),
        // The audit trail must be this transaction's record: its participants are the ones we created.
        ...(tx.participants.length > 0 ? { participantIds: tx.participants.map((p) => p.id) } : {}),
        ...(input.archivePrefix ? { archivePrefix: input.archivePrefix } : {}),
        ...keptWith(tx),
      });
      tx.archiveProblem = undefined;
      return this.finish({ status: 'completed', referenceId: input.referenceId, transactionId, esignId, archive });
    } catch (err) {
      const refused = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable;
      if (!refused) throw err;
      tx.archiveProblem = `${err.cause.type ?? FailureType.ArchiveInvalid}: ${err.cause.message}`;
      tx.archiveRefusals++;
      tx.moveTo('archive_invalid');
      metricMeter.createCounter('esign_archive_refused', 'archives', 'Completed ZIPs refused by verification').add(1);
      log.error('the completed ZIP was refused: nothing archived; fix the cause, then retryArchive', { problem: tx.archiveProblem });
      this.integrator.notify({
        type: 'transaction.archive_invalid',
        key: `${transactionId}:transaction.archive_invalid:${tx.archiveRefusals}`,
        data: { ...this.integrator.refs(), problem: tx.archiveProblem },
      });
      return undefined;
    }
  }

  /** Takes the transaction back from its signers; what the provider holds if it refuses. */
  #withdraw(why: string): Promise<WithdrawOutcome> {
    const { tx } = this;
    return this.steps.write(`Withdraw the transaction from its signers (${why})`, (a) =>
      a.withdrawTransaction({
        transactionId: tx.created!.transactionId,
        request: buildUpdateRequest(tx.request!, tx.input!.referenceId, { status: 'draft' }),
        ...(tx.replaceLandsUntil > 0 ? { landsUntil: tx.replaceLandsUntil } : {}),
      }),
    );
  }

  /**
   * Cancel or deadline: withdraw first, end only when the provider let go.
   * Refused (someone signed), the transaction is followed to its end: the
   * cancel fails with `WithdrawRefused`, the deadline leaves it `overdue`.
   */
  async withdrawOrFollow(why: 'cancel' | 'deadline', attempt?: CancelAttempt): Ending {
    const { tx } = this;
    // Until the outcome is decided: a replace queued behind this withdraw must not send the transaction again.
    tx.withdrawing = true;
    try {
      return await this.#withdrawThenDecide(why, attempt);
    } finally {
      tx.withdrawing = false;
    }
  }

  #withdrawn(why: 'cancel' | 'deadline', attempt: CancelAttempt | undefined): Promise<EsignTransactionResult> {
    return why === 'cancel'
      ? this.ended('cancelled', attempt!.reason, 'request')
      : this.ended('expired', 'signing deadline passed', 'deadline');
  }

  async #withdrawThenDecide(why: 'cancel' | 'deadline', attempt: CancelAttempt | undefined): Ending {
    const { tx } = this;
    let w: WithdrawOutcome;
    try {
      w = await this.#withdraw(why);
    } catch (err) {
      const refusal = providerRefusal(err);
      if (!refusal) throw err;
      // Nothing withdrawn, so it is followed as is; after a 404 (alone it proves nothing), once a read says if it is gone.
      const read = refusal.status === 404 ? await readAfterNotFound(this.steps, tx) : undefined;
      const end = read && (await this.follow(read));
      if (end) return end;
      return this.#refused(why, attempt, `the provider refused the withdraw: ${refusal.message}`, FailureType.ProviderRejected);
    }
    if (w.status !== undefined) tx.providerStatus = w.status;
    if (w.withdrawn) return this.#withdrawn(why, attempt);
    const { status } = w;
    if (status === undefined)
      // Refused, and the provider did not say how it stands: the next poll reads it.
      return this.#refused(why, attempt, 'the provider refused to withdraw the transaction', FailureType.WithdrawRefused);
    if (why === 'cancel') tx.cancel = undefined;
    const end = await this.follow({ ...w, status });
    if (end) return end; // a cancel returns that end
    if (w.status === 'completed') {
      if (attempt) attempt.refused = COMPLETING;
      return undefined;
    }
    const signed = w.participants ? `${w.participants.filter((p) => p.status === 'signed').length} of ${tx.participants.length}` : 'some';
    return this.#refused(
      why,
      attempt,
      `the provider refused to withdraw the transaction: ${signed} participant(s) have signed, so it can still complete`,
      FailureType.WithdrawRefused,
    );
  }

  /** Not withdrawn: the cancel is answered with why, a passed deadline leaves it `overdue`; either way it is followed. */
  #refused(why: 'cancel' | 'deadline', attempt: CancelAttempt | undefined, reason: string, type: FailureType): undefined {
    if (why === 'cancel') this.tx.cancel = undefined;
    if (attempt) {
      attempt.refused = { type, message: `${reason}; the workflow keeps following it` };
      log.warn('cancel refused: the provider keeps the transaction open', { providerStatus: this.tx.providerStatus, reason });
    } else {
      this.tx.moveTo('overdue');
      log.warn('deadline passed but the provider refused to withdraw: following the transaction to its end', { reason });
    }
    return undefined;
  }

  ended(
    status: EsignOutcome,
    reason: string,
    endedBy: NonNullable<EsignTransactionResult['endedBy']>,
    extra = {},
  ): Promise<EsignTransactionResult> {
    const { tx } = this;
    return this.finish({
      status,
      reason,
      referenceId: tx.input!.referenceId,
      transactionId: tx.created?.transactionId ?? null,
      esignId: tx.created?.esignId ?? null,
      endedBy,
      ...extra,
    });
  }

  /** Reports the end, once: the integrator's outcome event, the worker's log; a completion after it goes to the late path. */
  async finish(outcome: EsignTransactionResult): Promise<EsignTransactionResult> {
    const { tx } = this;
    if (Object.keys(tx.originals).length > 0) outcome.originals = tx.originals;
    tx.result = outcome;
    tx.moveTo(outcome.status);
    metricMeter
      .createCounter('esign_transactions_finished', 'transactions', 'Transactions finished, by outcome')
      .add(1, { status: outcome.status });
    // The outcome is the log's last event of this transaction: a late completion comes after it in the log. The
    // log delivers it once this run is over if need be.
    const type = `transaction.${outcome.status}` as const;
    this.integrator.notify({ type, key: `${outcome.transactionId ?? outcome.referenceId}:${type}`, data: { ...outcome } });
    await this.integrator.flush();
    try {
      await this.steps.report(`Report: ${outcome.status}`, (a) => a.recordCompletion({ result: outcome }));
    } catch (err) {
      log.error('completion could not be recorded in the worker log', { error: (err as Error).message });
    }
    // Every handler still running finishes on its own now that the result is set (workflows/README.md).
    await condition(allHandlersFinished);
    await handOnAfterEnd(tx, this.steps, outcome);
    return outcome;
  }
}
