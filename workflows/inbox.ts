/**
 * The inbox of one provider transaction: a completion the bridge found no running workflow for (its owner has ended,
 * or it never had one) lands here. The inbox asks who owns the transaction and, when that owner has ended (or there is
 * none), starts a late-completion workflow that archives the completion with what the owner left: nothing signed may
 * end without an archive. It then stays a while to acknowledge redeliveries. A completion whose owner cannot be found
 * ended is closed as orphaned after a bounded time, and archived late all the same.
 */
import {
  CancellationScope,
  condition,
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
import type { EsignWebhook } from '../src/esign/schemas.js';
import { durationToMs } from '../src/util/duration.js';
import { Clock } from './clock.js';
import {
  inboxNotificationSignal,
  inboxStatusQuery,
  type InboxInput,
  type InboxResult,
  type TransactionOwner,
} from '../src/definitions/inbox.js';
import { readNotification } from './notification.js';
import { EsignStatus, EsignTransactionId } from '../src/definitions/search-attributes.js';
import { findOwner } from './inbox-owner.js';
import { versioningBehavior } from './versioning.js';

const starter = proxyActivities<EsignActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  summary: 'Start the archiving of a completion nobody waits for',
});

type Ended = TransactionOwner & { owner: 'ended' };
/** What a late completion archives and reports with: how the owner ended, and what it left. */
type Handover = Omit<Ended, 'owner' | 'ownerWorkflowId'>;

export async function esignInbox(input: InboxInput): Promise<InboxResult> {
  const orphanAfterMs = durationToMs(input.orphanAfter ?? '7 days');
  const retainMs = durationToMs(input.retainAfterOwnerFinished ?? '3 days');
  // The inbox runs no local activity, so its clock is the workflow task's throughout.
  const clock = new Clock();
  let owner: string | null = null;
  let ownerFinished = false;
  let finishedAs: Handover | undefined;
  const pending: EsignWebhook[] = [];
  /** Completions that arrived after the owner was found ended without archiving. */
  const late: EsignWebhook[] = [];
  const seen = new Set<string>();
  let lateCompletion: string | undefined;

  upsertSearchAttributes([
    { key: EsignTransactionId, value: input.transactionId },
    { key: EsignStatus, value: 'inbox_waiting' },
  ]);

  setHandler(inboxStatusQuery, () => ({ owner, pending: pending.length, ownerFinished }));
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

  const startLateCompletion = async (ownerOutcome: Handover['outcome']) => {
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
   * A completion asks who owns the transaction. Resolves with the owner when it has ended (or there is none): nothing
   * is gained by waiting. Otherwise (it runs, or it cannot be told) it never resolves, and the inbox waits out its
   * orphan time.
   */
  const endedOwner = async (): Promise<Ended> => {
    await condition(() => pending.some((n) => n.event === ESIGN_COMPLETED_EVENT));
    try {
      const found = await findOwner(input);
      if (found?.owner === 'ended') return found;
      if (found)
        log.info('a completion arrived while its transaction workflow runs; looked for again later', { owner: found.ownerWorkflowId });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('could not find the owner of a completion; waiting as for any notification', { error: (err as Error).message });
    }
    await condition(() => false);
    throw new Error('unreachable');
  };

  // 1. Find the owner, or wait out the orphan time.
  let ended: Ended | undefined;
  await CancellationScope.cancellable(async () => {
    try {
      await Promise.race([
        sleep(orphanAfterMs, { summary: 'Wait for the owner of the notifications' }),
        endedOwner().then((found) => (ended = found)),
      ]);
    } finally {
      CancellationScope.current().cancel();
    }
  });
  if (!ended && pending.some((n) => n.event === ESIGN_COMPLETED_EVENT)) {
    // A completion is about to be closed as orphaned, and archived without what an owner left: its owner is looked
    // up once more (the provider may answer now, visibility has long caught up), so one that ended is not missed.
    // None found, or none to be found, it is closed as orphaned.
    try {
      const found = await findOwner(input);
      if (found?.owner === 'ended' && found.ownerWorkflowId !== null) ended = found;
    } catch (err) {
      log.warn('could not find the owner of a completion before closing it as orphaned', { error: (err as Error).message });
    }
  }
  if (!ended) {
    upsertSearchAttributes([{ key: EsignStatus, value: 'orphaned' }]);
    log.warn('no owner found in time: notifications closed as orphaned', {
      transactionId: input.transactionId,
      notifications: pending.length,
    });
    if (pending.some((n) => n.event === ESIGN_COMPLETED_EVENT)) await startLateCompletion(null);
    return {
      status: 'orphaned',
      transactionId: input.transactionId,
      owner: null,
      orphaned: [...pending],
      ...(lateCompletion ? { lateCompletion } : {}),
    };
  }

  // 2. The owner has ended (or there is none): what it left goes with each completion it did not archive.
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

  // 3. Stay a while to acknowledge late redeliveries without orphaning them, and archive each late completion.
  upsertSearchAttributes([{ key: EsignStatus, value: 'inbox_closed' }]);
  const until = clock.now() + retainMs;
  for (;;) {
    // Again for a later completion: the activity starts a new run only when no earlier one archived.
    if (late.length > 0 && handover.outcome !== 'completed') await startLateCompletion(handover.outcome);
    late.length = 0;
    const left = until - clock.now();
    if (left <= 0) break;
    await condition(() => late.length > 0, left, { summary: 'Acknowledge late redeliveries' });
  }
  return {
    status: 'closed',
    transactionId: input.transactionId,
    owner,
    orphaned: [],
    ...(lateCompletion ? { lateCompletion } : {}),
  };
}

// Auto-upgrade: under Worker Versioning a run moves to the deployment's current version at its next task, so a
// change to what this workflow records needs patched() (workflows/patches.ts, docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), esignInbox);
