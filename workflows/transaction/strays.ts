/**
 * Completions this run does not archive itself. One that came after its outcome
 * (not completed) was set goes to the late completion with what this run
 * leaves. So do those that reached this run naming another provider transaction: the
 * bridge routes a webhook to `esign-<referenceId>` by the provider's record, so
 * when a referenceId is used again, a late completion of the earlier transaction
 * reaches the later run. It is not this run's to archive, and it must not be
 * lost: once the provider confirms it (completed, with our referenceId), it goes
 * the late path as it would through the inbox: nothing more when its own run
 * archived it, else the late-completion workflow with what that run left (its
 * outcome, archive prefix, callback and uploads' hashes).
 */
import { isCancellation, log } from '@temporalio/workflow';
import type { EsignTransactionResult } from '../../src/definitions/transaction.js';
import { PROVIDER, step } from '../activity-options.js';
import type { SigningTransaction } from './machine.js';
import type { Steps } from './steps.js';

export async function handOnStrays(tx: SigningTransaction, steps: Steps): Promise<void> {
  const referenceId = tx.input!.referenceId;
  while (tx.held.strays.length > 0) {
    const stray = tx.held.strays.shift()!;
    const transactionId = stray.data.transaction_id;
    try {
      const record = await steps.attempt('Read the transaction a stray completion names', (a) => a.describeTransaction(transactionId));
      if (record.status !== 'completed' || record.referenceId !== referenceId) {
        log.warn('a completion for another transaction that the provider does not confirm as ours: ignored', {
          notificationId: stray.data.notificationId,
          providerStatus: record.status,
        });
        continue;
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The late completion checks with the provider itself before it archives anything: it may as well ask.
      log.warn('could not read the transaction a stray completion names; the late path checks it', { error: (err as Error).message });
    }
    const owner = await step(PROVIDER, 'Find the run that owned the stray completion').findTransactionOwner({ transactionId, referenceId });
    if (owner.owner === 'ended' && owner.outcome === 'completed') {
      log.info('a redelivered completion of a transaction its own run archived: stale', { notificationId: stray.data.notificationId });
      continue;
    }
    const { owner: _kind, ownerWorkflowId: _id, outcome, ...left } = owner.owner === 'ended' ? owner : { ...owner, outcome: null };
    await step(PROVIDER, 'Start the archiving of a completion of another transaction').startLateCompletion({
      transactionId,
      ownerOutcome: outcome,
      ...left,
    });
  }
}

/** After the outcome is set: until nothing is left, as a completion can come while a stray is handed on. */
export async function handOnAfterEnd(tx: SigningTransaction, steps: Steps, outcome: EsignTransactionResult): Promise<void> {
  for (let lateStarted = false; ;) {
    if (tx.completedAfterEnd && !lateStarted) {
      // Arrived after this run's outcome was set: nothing signed may end without an archive.
      lateStarted = true;
      await step(PROVIDER, 'Start the archiving of a completion after this end').startLateCompletion({
        transactionId: tx.created!.transactionId,
        ownerOutcome: outcome.status,
        ...leftBehind(tx, outcome),
      });
      continue;
    }
    if (!tx.created) tx.held.strayEarly();
    if (tx.held.strays.length === 0) return;
    await handOnStrays(tx, steps);
  }
}

/** What a late archive needs from this run: its archive prefix, callback and uploads' hashes. */
function leftBehind(tx: SigningTransaction, outcome: EsignTransactionResult) {
  const input = tx.input!;
  return {
    ...(input.archivePrefix ? { archivePrefix: input.archivePrefix } : {}),
    ...(input.callbackUrl ? { callbackUrl: input.callbackUrl } : {}),
    ...(outcome.originals ? { originals: outcome.originals } : {}),
  };
}
