/**
 * The inbox of one provider transaction: holds the provider's notifications
 * until the transaction workflow that owns them has registered, forwards them
 * to it, and closes unowned ones as orphaned after a bounded time. A
 * completion that no workflow waits for (its owner has ended, or it never had
 * one) is not dropped: the inbox starts a late-completion workflow that
 * archives it. An inbox that no workflow has registered with (a completion
 * after the inbox of its owner closed, or before the owner registered) asks
 * who owns the transaction, and starts it at once when that owner has ended.
 */
import {
  patched,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import { ESIGN_COMPLETED_EVENT } from '../src/esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook } from '../src/esign/schemas.js';
import { durationToMs } from '../src/util/duration.js';
import { Clock } from './clock.js';
import { esignCompletedSignal, esignEventSignal, type EsignOutcome } from '../src/definitions/transaction.js';
import {
  inboxNotificationSignal,
  inboxOwnerFinishedSignal,
  inboxRegisterSignal,
  inboxStatusQuery,
  type InboxInput,
  type InboxResult,
  type OwnerFinished,
  type TransactionOwner,
} from '../src/definitions/inbox.js';
import { readNotification } from './notification.js';
import { EsignStatus, EsignTransactionId } from '../src/definitions/search-attributes.js';
import { findOwner } from './inbox-owner.js';
import { LATE_COMPLETION_PATCH, LATE_RETRY_PATCH, OWNER_LOOKUP_PATCH, OWNER_WITHOUT_RECORD_PATCH } from './patches.js';
import { versioningBehavior } from './versioning.js';

const starter = proxyActivities<EsignActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  summary: 'Start the archiving of a completion nobody waits for',
});

/** What a late completion archives and reports with: how the owner ended, and what it handed over. */
type Handover = Omit<OwnerFinished, 'outcome'> & { outcome: EsignOutcome | null };

export async function esignInbox(input: InboxInput): Promise<InboxResult> {
  const orphanAfterMs = durationToMs(input.orphanAfter ?? '7 days');
  const retainMs = durationToMs(input.retainAfterOwnerFinished ?? '3 days');
  // The inbox runs no local activity, so its clock is the workflow task's throughout.
  const clock = new Clock();
  let owner: string | null = null;
  let ownerFinished = false;
  let finishedAs: Handover | undefined;
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

  const startLateCompletion = async (ownerOutcome: EsignOutcome | null) => {
    const { workflowId } = await starter.startLateCompletion({
      transactionId: input.transactionId,
      ownerOutcome,
      ...(finishedAs?.archivePrefix ? { archivePrefix: finishedAs.archivePrefix } : {}),
      ...(finishedAs?.callbackUrl ? { callbackUrl: finishedAs.callbackUrl } : {}),
      ...(finishedAs?.originals ? { originals: finishedAs.originals } : {}),
    });
    lateCompletion = workflowId;
    log.warn('a completion arrived that no transaction workflow waits for: archiving it late', { workflowId });
  };

  /**
   * While no workflow has registered, a completion asks who owns the
   * transaction. Resolves with the owner when it has ended (or there is
   * none): nobody will register, so nothing is gained by waiting. Otherwise
   * (it runs, or it cannot be told) it never resolves, and the inbox waits as before.
   */
  const endedOwner = async (): Promise<TransactionOwner & { owner: 'ended' }> => {
    await condition(() => pending.some((n) => n.event === ESIGN_COMPLETED_EVENT));
    if (patched(OWNER_LOOKUP_PATCH)) {
      try {
        const found = await findOwner(input);
        if (found?.owner === 'ended') return found;
        if (found)
          log.info('a completion arrived before its transaction workflow registered; waiting for it', { owner: found.ownerWorkflowId });
      } catch (err) {
        if (isCancellation(err)) throw err;
        log.warn('could not find the owner of a completion; waiting as for any notification', { error: (err as Error).message });
      }
    }
    await condition(() => false);
    throw new Error('unreachable');
  };

  // 1. Wait for the transaction workflow to register (it does so right after creating the transaction).
  //    The timer and the registration are those `condition(registered, orphanAfter)` recorded before the lookup.
  let ended: (TransactionOwner & { owner: 'ended' }) | undefined;
  const registered = await CancellationScope.cancellable(async () => {
    try {
      return await Promise.race([
        sleep(orphanAfterMs, { summary: 'Wait for the transaction workflow to register' }).then(() => false),
        condition(() => owner !== null).then(() => true),
        endedOwner().then((found) => ((ended = found), true)),
      ]);
    } finally {
      CancellationScope.current().cancel();
    }
  });
  if (!registered && !ended && pending.some((n) => n.event === ESIGN_COMPLETED_EVENT) && patched(OWNER_WITHOUT_RECORD_PATCH)) {
    // A completion is about to be closed as orphaned, and archived without what an owner left: its owner is looked
    // up once more (the provider may answer now, visibility has long caught up), so one that ended is not missed.
    // None found, or none to be found, it is closed as orphaned as before.
    try {
      const found = await findOwner(input);
      if (found?.owner === 'ended' && found.ownerWorkflowId !== null) ended = found;
    } catch (err) {
      log.warn('could not find the owner of a completion before closing it as orphaned', { error: (err as Error).message });
    }
  }
  if (ended && owner === null) {
    // Nobody will register: what the ended owner left stands in for its OwnerFinished signal.
    const { ownerWorkflowId, owner: _found, ...handover } = ended;
    owner = ownerWorkflowId;
    ownerFinished = true;
    finishedAs = handover;
    for (const n of pending.splice(0)) {
      if (n.event === ESIGN_COMPLETED_EVENT && handover.outcome !== 'completed') late.push(n);
      else if (n.event === ESIGN_COMPLETED_EVENT)
        log.info('a late copy of a completion its owner archived: dropped', {
          notificationId: n.data.notificationId,
          owner: ownerWorkflowId,
        });
      else log.info('stale notification: the transaction workflow has finished', { notificationId: n.data.notificationId });
    }
    log.warn('a completion arrived that no transaction workflow will take: its owner has ended, or there is none', {
      owner: ownerWorkflowId,
      outcome: handover.outcome,
    });
  } else if (!registered) {
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
  } else {
    upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_forwarding' }]);
  }

  // 2. Forward until the owner finishes. Signals between workflows are durable.
  const ownerHandle = getExternalWorkflowHandle(owner ?? '');
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
    const until = clock.now() + retainMs;
    for (;;) {
      // Again for a later completion: the activity starts a new run only when no earlier one archived.
      if (late.length > 0 && finishedAs?.outcome !== 'completed' && (lateCompletion === undefined || patched(LATE_RETRY_PATCH)))
        await startLateCompletion(finishedAs?.outcome ?? null);
      late.length = 0;
      const left = until - clock.now();
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

// Auto-upgrade: under Worker Versioning a run moves to the deployment's current version at its next task, so a
// change to this workflow still needs patched() (docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), esignInbox);
