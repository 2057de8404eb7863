/**
 * The inbox of one provider transaction: holds the provider's notifications
 * until the transaction workflow that owns them has registered, forwards them
 * to it, and closes unowned ones as orphaned after a bounded time. A
 * completion that no workflow waits for (its owner has ended, or it never had
 * one) is not dropped: the inbox starts a late-completion workflow that
 * archives it.
 */
import {
  condition,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import { ESIGN_COMPLETED_EVENT } from '../src/esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook } from '../src/esign/schemas.js';
import { durationToMs } from '../src/util/duration.js';
import { esignCompletedSignal, esignEventSignal } from './definitions.js';
import {
  inboxNotificationSignal,
  inboxOwnerFinishedSignal,
  inboxRegisterSignal,
  inboxStatusQuery,
  type InboxInput,
  type InboxResult,
  type OwnerFinished,
} from './inbox-definitions.js';
import { readNotification } from './notification.js';
import { EsignStatus, EsignTransactionId } from './search-attributes.js';

/** Completions nobody waits for start a late-completion workflow; histories before it only logged them. */
export const LATE_COMPLETION_PATCH = 'inbox-starts-late-completion';

const starter = proxyActivities<EsignActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  summary: 'Start the archiving of a completion nobody waits for',
});

export async function esignInbox(input: InboxInput): Promise<InboxResult> {
  const orphanAfterMs = durationToMs(input.orphanAfter ?? '7 days');
  const retainMs = durationToMs(input.retainAfterOwnerFinished ?? '3 days');
  let owner: string | null = null;
  let ownerFinished = false;
  let finishedAs: OwnerFinished | undefined;
  const pending: EsignWebhook[] = [];
  /** Completions that arrived after the owner ended without archiving. */
  const late: EsignWebhook[] = [];
  const seen = new Set<string>();
  let forwarded = 0;
  let lateCompletion: string | undefined;

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
  setHandler(inboxOwnerFinishedSignal, (finished) => {
    ownerFinished = true;
    finishedAs = finished;
  });
  setHandler(inboxNotificationSignal, (payload) => {
    const notification = readNotification(payload);
    if (typeof notification === 'string' || notification.data.transaction_id !== input.transactionId) {
      log.warn('notification for another transaction or invalid; ignored');
      return;
    }
    const id = notification.data.notificationId;
    if (seen.has(id)) return; // redelivery
    seen.add(id);
    if (ownerFinished) {
      // A completion after an owner that did not archive (cancelled, expired…) must still be archived.
      if (notification.event === ESIGN_COMPLETED_EVENT && finishedAs?.outcome !== 'completed') late.push(notification);
      else log.info('stale notification: the transaction workflow has finished', { notificationId: id, event: notification.event });
      return;
    }
    pending.push(notification);
  });

  const startLateCompletion = async (ownerOutcome: OwnerFinished['outcome'] | null) => {
    const { workflowId } = await starter.startLateCompletion({
      transactionId: input.transactionId,
      ownerOutcome,
      ...(finishedAs?.archivePrefix ? { archivePrefix: finishedAs.archivePrefix } : {}),
      ...(finishedAs?.callbackUrl ? { callbackUrl: finishedAs.callbackUrl } : {}),
    });
    lateCompletion = workflowId;
    log.warn('a completion arrived that no transaction workflow waits for: archiving it late', { workflowId });
  };

  // 1. Wait for the transaction workflow to register (it does so right after creating the transaction).
  const registered = await condition(() => owner !== null, orphanAfterMs, { summary: 'Wait for the transaction workflow to register' });
  if (!registered) {
    upsertSearchAttributes([{ key: EsignStatus, value: 'orphaned' }]);
    log.warn('no transaction workflow registered in time: notifications closed as orphaned', {
      transactionId: input.transactionId,
      notifications: pending.length,
    });
    if (pending.some((n) => n.event === ESIGN_COMPLETED_EVENT) && patched(LATE_COMPLETION_PATCH)) await startLateCompletion(null);
    return {
      status: 'orphaned',
      transactionId: input.transactionId,
      owner: null,
      forwarded,
      orphaned: [...pending],
      ...(lateCompletion ? { lateCompletion } : {}),
    };
  }
  upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_forwarding' }]);

  // 2. Forward until the owner finishes. Signals between workflows are durable.
  const ownerHandle = getExternalWorkflowHandle(owner!);
  while (!ownerFinished || pending.length > 0) {
    await condition(() => pending.length > 0 || ownerFinished);
    while (pending.length > 0) {
      const next = pending.shift()!;
      try {
        if (next.event === ESIGN_COMPLETED_EVENT) await ownerHandle.signal(esignCompletedSignal, next as EsignCompletedWebhook);
        else await ownerHandle.signal(esignEventSignal, next);
        forwarded++;
      } catch (err) {
        log.info('owner cannot take signals any more (finished); notification is stale', { error: (err as Error).message });
        ownerFinished = true;
        if (next.event === ESIGN_COMPLETED_EVENT) late.push(next);
      }
    }
  }

  // 3. Stay a while to acknowledge late redeliveries without orphaning them, and archive a late completion.
  upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_closed' }]);
  if (!patched(LATE_COMPLETION_PATCH)) {
    await condition(() => false, retainMs, { summary: 'Acknowledge late redeliveries' });
  } else {
    const until = Date.now() + retainMs;
    for (;;) {
      if (late.length > 0 && finishedAs?.outcome !== 'completed' && lateCompletion === undefined)
        await startLateCompletion(finishedAs?.outcome ?? null);
      late.length = 0;
      const left = until - Date.now();
      if (left <= 0) break;
      await condition(() => late.length > 0, left, { summary: 'Acknowledge late redeliveries' });
    }
  }
  return {
    status: 'closed',
    transactionId: input.transactionId,
    owner,
    forwarded,
    orphaned: [],
    ...(lateCompletion ? { lateCompletion } : {}),
  };
}
