/**
 * Completions that reached this run but name another provider transaction. The
 * bridge routes a webhook to `esign-<referenceId>` by the provider's record, so
 * when a referenceId is used again, a late completion of the earlier transaction
 * reaches the later run. It is not this run's to archive, and it must not be
 * lost: once the provider confirms it (completed, with our referenceId), the
 * late-completion workflow archives it, as for any completion nobody waits for.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { PROVIDER, step } from '../activity-options.js';
import type { SigningTransaction } from './machine.js';
import type { Steps } from './steps.js';

export async function handOnStrays(tx: SigningTransaction, steps: Steps): Promise<void> {
  while (tx.strays.length > 0) {
    const stray = tx.strays.shift()!;
    const transactionId = stray.data.transaction_id;
    let confirmed = true;
    try {
      const record = await steps.provider('Read the transaction a stray completion names', (a) => a.describeTransaction(transactionId));
      confirmed = record.status === 'completed' && record.referenceId === tx.input!.referenceId;
      if (!confirmed)
        log.warn('a completion for another transaction that the provider does not confirm as ours: ignored', {
          notificationId: stray.data.notificationId,
          providerStatus: record.status,
        });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The late completion checks with the provider itself before it archives anything: it may as well ask.
      log.warn('could not read the transaction a stray completion names; the late path checks it', { error: (err as Error).message });
    }
    if (confirmed)
      await step(PROVIDER, 'Start the archiving of a completion of another transaction').startLateCompletion({
        transactionId,
        ownerOutcome: null,
      });
  }
}
