import type { Client } from '@temporalio/client';
import type { EsignWebhook } from '../esign/schemas.js';
import {
  INBOX_WORKFLOW_TYPE,
  inboxIdFor,
  inboxNotificationSignal,
  type EsignInboxWorkflow,
  type InboxInput,
} from '../definitions/inbox.js';

export class TemporalUnavailableError extends Error {
  override readonly name = 'TemporalUnavailableError';
}

export interface Delivery {
  workflowId: string;
}

/**
 * Records a provider notification (any end event) durably in Temporal: signal-with-start of
 * the transaction's inbox workflow. When this resolves, the server has
 * accepted the signal, so the webhook may be acknowledged.
 */
export async function deliverNotification(
  client: Client,
  notification: EsignWebhook,
  options: { taskQueue: string; orphanAfter?: string; timeoutMs?: number },
): Promise<Delivery> {
  const workflowId = inboxIdFor(notification.data.transaction_id);
  const args: InboxInput = {
    transactionId: notification.data.transaction_id,
    ...(options.orphanAfter ? { orphanAfter: options.orphanAfter } : {}),
  };
  try {
    await client.withDeadline(Date.now() + (options.timeoutMs ?? 10_000), () =>
      client.workflow.signalWithStart<EsignInboxWorkflow, [EsignWebhook]>(INBOX_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: options.taskQueue,
        args: [args],
        signal: inboxNotificationSignal,
        signalArgs: [notification],
      }),
    );
  } catch (err) {
    throw new TemporalUnavailableError(`Temporal did not accept the signal: ${(err as Error).message}`, { cause: err });
  }
  return { workflowId };
}
