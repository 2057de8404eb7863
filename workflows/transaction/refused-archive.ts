/**
 * The loop's turn while a completed ZIP is refused (`archive_invalid`): the
 * provider completed the transaction, and only an operator's `retryArchive`,
 * after fixing the cause, moves it on.
 */
import { allHandlersFinished, condition } from '@temporalio/workflow';
import type { EsignTransactionResult } from '../../src/definitions/transaction.js';
import type { Endings } from './endings.js';
import type { Integrator } from './integrator.js';
import type { SigningTransaction } from './machine.js';

/** The result once archived; `handOver` when the run should continue as new; undefined to go round the loop. */
export async function awaitArchiveRetry(
  tx: SigningTransaction,
  endings: Endings,
  integrator: Integrator,
  limits: { maxEvents: number; maxPollMs: number },
): Promise<EsignTransactionResult | 'handOver' | undefined> {
  tx.notified = undefined;
  tx.progressStale = false;
  if (tx.archiveRetriesAsked > 0) {
    tx.archiveRetriesAsked = 0;
    tx.moveTo('archiving');
    return endings.archive();
  }
  if (tx.historyFull(limits.maxEvents)) {
    // As in the main loop: the refusal's event and a retry's answer go out before the hand-over.
    await condition(() => (integrator.settled && allHandlersFinished()) || tx.archiveRetriesAsked > 0 || tx.held.strays.length > 0);
    return tx.archiveRetriesAsked === 0 && tx.held.strays.length === 0 ? 'handOver' : undefined;
  }
  // Woken at the longest poll interval: a run with nothing to do would otherwise never learn that the
  // deployment's version changed, and would hold its old version's workers for ever (docs/operations.md).
  // Never by the history's length in the predicate: a rejected update's workflow task records no event to
  // replay, and a length crossing the limit in it alone made a timer cancel that replay cannot reproduce.
  await condition(() => tx.archiveRetriesAsked > 0 || tx.held.strays.length > 0, limits.maxPollMs);
  return undefined;
}
