/**
 * The inbox's owner lookup (./inbox.ts): who owns the transaction of a completion that reached an inbox no workflow
 * has registered with. The workflow of the referenceId the provider's record names; when the provider does not answer
 * that read (a final 4xx, or not at all), the owner is still looked up without it (the run that names the transaction,
 * or the referenceId the bridge routed the completion by), so that a late copy of a completion its owner archived is
 * not taken for one nobody owns, and archived again without what the owner left.
 */
import { isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import type { InboxInput, TransactionOwner } from '../src/definitions/inbox.js';

/** A few attempts only: when the owner cannot be found, the inbox waits for it as before. */
const lookup = (summary: string) =>
  proxyActivities<EsignActivities>({
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
    summary,
  });

type Described = Awaited<ReturnType<EsignActivities['describeTransaction']>>;

/**
 * The owner of `input.transactionId`, or undefined when the provider says the transaction is not completed (a late
 * completion would find nothing to archive). Fails when the owner cannot be told.
 */
export async function findOwner(input: InboxInput): Promise<TransactionOwner | undefined> {
  const owners = lookup('Find the workflow that owns this transaction');
  let described: Described;
  try {
    described = await lookup('Read the completed transaction at the provider').describeTransaction(input.transactionId);
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('the provider did not answer the read of a completed transaction; looking up its owner without it', {
      error: (err as Error).message,
    });
    return owners.findTransactionOwner({ transactionId: input.transactionId, referenceId: input.referenceId ?? null, unconfirmed: true });
  }
  if (described.status !== 'completed') {
    log.warn('a completion arrived, but the provider says otherwise; waiting as for any notification', {
      providerStatus: described.status,
    });
    return undefined;
  }
  return owners.findTransactionOwner({ transactionId: input.transactionId, referenceId: described.referenceId });
}
