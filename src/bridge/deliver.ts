import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ESIGN_COMPLETED_EVENT } from '../esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook } from '../esign/schemas.js';
import {
  INBOX_WORKFLOW_TYPE,
  inboxIdFor,
  inboxNotificationSignal,
  type EsignInboxWorkflow,
  type InboxInput,
} from '../definitions/inbox.js';
import { esignCompletedSignal, esignEventSignal, workflowIdFor } from '../definitions/transaction.js';
import { OwnerLookupError, type OwnerDirectory } from './owners.js';

export { OwnerLookupError, providerOwners, type OwnerDirectory } from './owners.js';

export class TemporalUnavailableError extends Error {
  override readonly name = 'TemporalUnavailableError';
}

/**
 * Where a notification went: the transaction's own workflow (the common case); the
 * inbox of its provider transaction, for a completion no running workflow owns (it
 * is archived late, docs/webhooks.md); or nowhere, for another event no running
 * workflow owns (nothing is left to do with it).
 */
export type Delivery =
  { route: 'transaction'; workflowId: string } | { route: 'inbox'; workflowId: string } | { route: 'stale'; workflowId: string | null };

export interface DeliveryOptions {
  taskQueue: string;
  owners: OwnerDirectory;
  orphanAfter?: string;
  timeoutMs?: number;
}

/**
 * Records a provider notification durably in Temporal. When this resolves, the
 * server has accepted the signal (or no workflow can use it), so the webhook may be
 * acknowledged. Throws OwnerLookupError when the provider cannot say who owns the
 * transaction or does not confirm a completion, TemporalUnavailableError when Temporal does not accept the signal:
 * both mean "ask the provider to redeliver".
 */
export async function deliverNotification(client: Client, notification: EsignWebhook, options: DeliveryOptions): Promise<Delivery> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const completion = notification.event === ESIGN_COMPLETED_EVENT;
  // A completion is acknowledged only once the provider confirms it: one it does not confirm yet (a record that
  // lags its webhook) is asked again by redelivery, never parked or handed on unconfirmed. One the provider does
  // not know at all is held by the inbox until orphanAfter, visibly.
  if (completion) {
    const status = await options.owners.statusOf(notification.data.transaction_id);
    if (status !== null && status !== 'completed')
      throw new OwnerLookupError(`the provider does not confirm this completion yet (its status is ${status}); asking it to redeliver`);
  }
  const referenceId = await options.owners.referenceOf(notification.data.transaction_id);
  const ownerId = referenceId === null ? null : workflowIdFor(referenceId);
  if (ownerId !== null) {
    // A signal reaches the workflow id's running run, whichever run of a continue-as-new chain that is. The
    // workflow checks the notification names its own transaction: a reused referenceId's run hands another one on.
    const handle = client.workflow.getHandle(ownerId);
    try {
      await client.withDeadline(deadline, () =>
        completion
          ? handle.signal(esignCompletedSignal, notification as EsignCompletedWebhook)
          : handle.signal(esignEventSignal, notification),
      );
      return { route: 'transaction', workflowId: ownerId };
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw unavailable(err);
    }
  }
  // No running workflow owns it. Only a completion still matters: something signed must be archived, by the late path.
  if (!completion) return { route: 'stale', workflowId: ownerId };
  const workflowId = inboxIdFor(notification.data.transaction_id);
  const args: InboxInput = {
    transactionId: notification.data.transaction_id,
    ...(options.orphanAfter ? { orphanAfter: options.orphanAfter } : {}),
    // What the provider's record named: the inbox finds the owner by it too, should its own read of the record fail.
    ...(referenceId !== null ? { referenceId } : {}),
  };
  try {
    await client.withDeadline(deadline, () =>
      client.workflow.signalWithStart<EsignInboxWorkflow, [EsignWebhook]>(INBOX_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: options.taskQueue,
        args: [args],
        signal: inboxNotificationSignal,
        signalArgs: [notification],
      }),
    );
  } catch (err) {
    throw unavailable(err);
  }
  return { route: 'inbox', workflowId };
}

const unavailable = (err: unknown) =>
  new TemporalUnavailableError(`Temporal did not accept the signal: ${(err as Error).message}`, { cause: err });
