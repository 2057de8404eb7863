/**
 * The inbox of one provider transaction: holds completion notifications until
 * the transaction workflow that owns them has registered, forwards them to it,
 * and closes unowned ones as orphaned after a bounded time.
 */
import { condition, getExternalWorkflowHandle, log, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { EsignCompletedWebhook } from '../src/esign/schemas.js';
import { durationToMs } from '../src/util/duration.js';
import { esignCompletedSignal } from './definitions.js';
import {
  inboxNotificationSignal,
  inboxOwnerFinishedSignal,
  inboxRegisterSignal,
  inboxStatusQuery,
  type InboxInput,
  type InboxResult,
} from './inbox-definitions.js';
import { readCompletedNotification } from './notification.js';
import { EsignStatus, EsignTransactionId } from './search-attributes.js';

export async function esignInbox(input: InboxInput): Promise<InboxResult> {
  const orphanAfterMs = durationToMs(input.orphanAfter ?? '7 days');
  const retainMs = durationToMs(input.retainAfterOwnerFinished ?? '3 days');
  let owner: string | null = null;
  let ownerFinished = false;
  const pending: EsignCompletedWebhook[] = [];
  const seen = new Set<string>();
  let forwarded = 0;

  upsertSearchAttributes([
    { key: EsignTransactionId, value: input.transactionId },
    { key: EsignStatus, value: 'inbox_waiting' },
  ]);

  setHandler(inboxStatusQuery, () => ({ owner, pending: pending.length, forwarded, ownerFinished }));
  setHandler(inboxRegisterSignal, ({ ownerWorkflowId }) => {
    if (owner === null) owner = ownerWorkflowId;
    else if (owner !== ownerWorkflowId)
      log.warn('a second workflow claimed this transaction; kept the first', { owner, claimant: ownerWorkflowId });
  });
  setHandler(inboxOwnerFinishedSignal, () => {
    ownerFinished = true;
  });
  setHandler(inboxNotificationSignal, (payload) => {
    const notification = readCompletedNotification(payload);
    if (typeof notification === 'string' || notification.data.transaction_id !== input.transactionId) {
      log.warn('notification for another transaction or invalid; ignored');
      return;
    }
    const id = notification.data.notificationId;
    if (seen.has(id)) return; // redelivery
    seen.add(id);
    if (ownerFinished) {
      log.info('stale notification: the transaction workflow has finished', { notificationId: id });
      return;
    }
    pending.push(notification);
  });

  // 1. Wait for the transaction workflow to register (it does so right after creating the transaction).
  const registered = await condition(() => owner !== null, orphanAfterMs, { summary: 'Wait for the transaction workflow to register' });
  if (!registered) {
    upsertSearchAttributes([{ key: EsignStatus, value: 'orphaned' }]);
    log.warn('no transaction workflow registered in time: notifications closed as orphaned', {
      transactionId: input.transactionId,
      notifications: pending.length,
    });
    return { status: 'orphaned', transactionId: input.transactionId, owner: null, forwarded, orphaned: [...pending] };
  }
  upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_forwarding' }]);

  // 2. Forward until the owner finishes. Signals between workflows are durable.
  const ownerHandle = getExternalWorkflowHandle(owner!);
  while (!ownerFinished || pending.length > 0) {
    await condition(() => pending.length > 0 || ownerFinished);
    while (pending.length > 0) {
      const next = pending.shift()!;
      try {
        await ownerHandle.signal(esignCompletedSignal, next);
        forwarded++;
      } catch (err) {
        log.info('owner cannot take signals any more (finished); notification is stale', { error: (err as Error).message });
        ownerFinished = true;
      }
    }
  }

  // 3. Stay a while to acknowledge late redeliveries without orphaning them.
  upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_closed' }]);
  await condition(() => false, retainMs, { summary: 'Acknowledge late redeliveries' });
  return { status: 'closed', transactionId: input.transactionId, owner, forwarded, orphaned: [] };
}
