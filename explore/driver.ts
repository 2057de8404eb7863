/**
 * Runs one schedule on a time-skipping server and records what happened:
 * the workflow's end, the model's state at that end, every update's outcome,
 * and every history the schedule produced (the transaction's runs, its inbox,
 * a late completion). explore/checks.ts judges the record.
 *
 * Time: the server's clock stands still while the driver acts (the test
 * server locks time skipping until someone waits), and moves on only when
 * the driver sleeps to the next step, so a step at +90 min happens at +90 min
 * of the workflow's time, whatever the machine's speed. Timers, retries and
 * polls in between run as they would, in skipped time. (Hence a plain client:
 * the test environment's own unlocks time skipping while it waits for a
 * result, and an unlocked server runs every timer it has in an instant.)
 *
 * After the last step the driver lets time run until the workflow ends,
 * within a bound: past the deadline the provider expires a transaction it
 * still holds open (so an overdue workflow ends too), and an operator repairs
 * an archive that refused its ZIP. A workflow still open past the bound is a
 * finding, reported with where it stalled.
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import { WorkflowUpdateFailedError, WorkflowUpdateStage, type WorkflowHandle, type WorkflowUpdateHandle } from '@temporalio/client';
import { deliverNotification, OwnerLookupError, type OwnerDirectory } from '../src/bridge/deliver.js';
import { startEsignTransaction } from '../src/client/transactions.js';
import type { EsignWebhook } from '../src/esign/schemas.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  esignEventSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
  workflowIdFor,
} from '../src/definitions/transaction.js';
import type { esignTransaction } from '../workflows/esign-transaction.js';
import { eventLogIdFor } from '../src/definitions/event-log.js';
import { inboxIdFor, inboxNotificationSignal } from '../src/definitions/inbox.js';
import { lateCompletionIdFor, lateCompletionStatusQuery, lateRetryArchiveUpdate } from '../src/definitions/late-completion.js';
import { createExplorerActivities } from './activities.js';
import { Aftermath, errorText } from './aftermath.js';
import { retryArchiveUpdate, type WorkflowFeatures } from './features.js';
import { transactionInput } from './input.js';
import type { Lane } from './lane.js';
import type { MessageOutcome, Observation, RecordedHistory, WorkflowEnd } from './observation.js';
import { ENDED, ProviderModel, uuidFactory } from './provider-model.js';
import type { Delivery, Schedule, Step, TimedStep } from './schedule.js';
import { pendingTimerDeadlines, taskInFlight } from './timers.js';

/** Real time a step or an advance may take: a timer due sooner is fired first (see `settle`). */
const TIMER_MARGIN_MS = 2_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export interface DriverOptions {
  lane: Lane;
  /** Unique per run on a lane: it is in every id the run makes (explore/lane.ts routes activities by it). */
  run: number;
  /** What the workflow code offers. */
  features: WorkflowFeatures;
  log?: (line: string) => void;
  /** Told where the run is (a step, a phase), so a run that hangs in real time can say where. */
  onPhase?: (phase: string) => void;
}

export async function runSchedule(schedule: Schedule, options: DriverOptions): Promise<Observation> {
  const { lane, run } = options;
  const { env, taskQueue } = lane;
  const { features } = options;
  // Not env.client: its result() unlocks time skipping while it waits, and an unlocked server runs every
  // timer it has (the inbox's days, the next poll) in an instant, which would move the schedule's clock.
  const client = lane.client;
  const uuid = uuidFactory(schedule.seed, run);
  const referenceId = `x${schedule.seed}-${run}`;
  const workflowId = workflowIdFor(referenceId);
  const model = new ProviderModel({ uuid });
  const activities = createExplorerActivities({ model, faults: schedule.faults });
  const participantIds = Array.from({ length: schedule.setup.participants }, () => uuid());
  const messages: MessageOutcome[] = [];
  const after = new Aftermath(client, workflowId, referenceId, model, messages);
  const inFlight: Promise<void>[] = [];
  let directAfterEnd = 0;
  let restarts = 0;
  let handedBack: number;

  // --------------------------------------------------------- the timeline
  let t0 = 0;
  let seq = 0;
  const queue: { at: number; seq: number; what: string; run: () => Promise<void> }[] = [];
  const enqueue = (at: number, what: string, fn: () => Promise<void>) => {
    queue.push({ at, seq: seq++, what, run: fn });
    queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
  };
  const now = () => env.currentTimeMs();
  /**
   * Lets this run's workflows settle before time moves or a step acts: waits (a little, in real time) while one
   * has a workflow task in flight, and fires at once the timers due within TIMER_MARGIN_MS. The test server's
   * clock runs on in real time, and a timer that fires while the task cancelling it runs makes the server refuse
   * the task (sdk-java#2606): time that skips under a running task, or a step that lands just before a timer the
   * driver's own clock lined up with, would do that.
   */
  const settle = async () => {
    for (let i = 0; i < 100; i++) {
      const ids = [workflowId, eventLogIdFor(referenceId), ...model.byReference(referenceId).map((t) => inboxIdFor(t.id))];
      const histories = await Promise.all(
        ids.map((id) =>
          client.workflow
            .getHandle(id)
            .fetchHistory()
            .catch(() => undefined),
        ),
      );
      if (histories.some((h) => taskInFlight(h))) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const current = await now();
      const due = histories.flatMap((h) => pendingTimerDeadlines(h)).filter((at) => at <= current + TIMER_MARGIN_MS);
      if (due.length === 0) return;
      await env.sleep(Math.max(...due) - current + 1);
    }
  };
  const advanceTo = async (target: number) => {
    const current = await now();
    if (target <= current) return;
    await settle();
    await env.sleep(target - current);
    await settle();
  };
  const runDue = async () => {
    const current = await now();
    while (queue.length > 0 && queue[0]!.at <= current) {
      const next = queue.shift()!;
      options.log?.(`+${Math.round((next.at - t0) / 1000)}s (now +${Math.round((current - t0) / 1000)}s) ${next.what}`);
      options.onPhase?.(`${next.what} at +${Math.round((next.at - t0) / 1000)}s`);
      await next.run();
    }
  };

  const handle = (): WorkflowHandle<typeof esignTransaction> => client.workflow.getHandle<typeof esignTransaction>(workflowId);
  const ours = () => model.byReference(referenceId)[0];

  // Each webhook the model emits during a step takes the fate the step gives it (or the bridge's, by default).
  let fates: Delivery[] = [];
  let emittedAt = 0;
  model.onWebhook = (notification) => {
    const fate = fates.shift() ?? [{ via: 'bridge', afterMs: 0 }];
    for (const copy of fate) {
      enqueue(emittedAt + copy.afterMs, `${notification.event} via ${copy.via}`, () => deliver(notification, copy.via));
    }
  };
  // The bridge asks the provider (the model) which referenceId a transaction has, as the real one asks the sandbox.
  const recordOf = (transactionId: string) => {
    try {
      return model.get(transactionId);
    } catch {
      return undefined;
    }
  };
  const owners: OwnerDirectory = {
    referenceOf: async (transactionId) => recordOf(transactionId)?.referenceId ?? null,
    statusOf: async (transactionId) => recordOf(transactionId)?.status ?? null,
  };
  const deliver = async (notification: EsignWebhook, via: 'direct' | 'bridge', attempt = 1): Promise<void> => {
    if (via === 'bridge') {
      try {
        await deliverNotification(client, notification, { taskQueue, owners });
      } catch (err) {
        // 503: the provider does not confirm it yet. It redelivers later, as a real provider retries.
        if (!(err instanceof OwnerLookupError) || attempt >= 5) throw err;
        enqueue((await now()) + 5 * MINUTE, `${notification.event} redelivered`, () => deliver(notification, via, attempt + 1));
      }
      return;
    }
    try {
      if (notification.event === 'esign-completed') await handle().signal(esignCompletedSignal, notification);
      else await handle().signal(esignEventSignal, notification);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      directAfterEnd++;
    }
  };

  const track = (step: string, kind: MessageOutcome['kind'], call: Promise<unknown>) => {
    const record: MessageOutcome = { step, kind, outcome: 'pending' };
    messages.push(record);
    inFlight.push(
      call.then(
        (value) => {
          record.outcome = 'ok';
          record.value = value;
        },
        (err: unknown) => {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          record.outcome = cause ? 'failed' : 'error';
          record.type = (cause as { type?: string } | undefined)?.type ?? (cause ? cause.name : (err as Error)?.name);
          record.message = errorText(cause ?? err);
        },
      ),
    );
  };

  /**
   * Sends an update and waits until the workflow accepted (or refused) it, so that messages of one instant
   * reach the workflow in the schedule's order; its answer is followed like any other. A workflow that does
   * not take it within a few seconds of real time (it may be stuck) is not waited for.
   */
  const update = async (
    label: string,
    kind: MessageOutcome['kind'],
    send: (h: ReturnType<typeof handle>) => Promise<WorkflowUpdateHandle<unknown>>,
  ) => {
    const accepted = send(handle());
    track(
      label,
      kind,
      accepted.then((u) => u.result()),
    );
    await Promise.race([accepted.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  };

  /** A webhook for a transaction that is not this one's (the workflow and its inbox must ignore it). */
  const strayNotification = (event: 'esign-completed' | 'esign-declined' = 'esign-completed'): EsignWebhook => ({
    event,
    entity: 'esign',
    data: { notificationId: uuid(), entity_id: uuid(), transaction_id: uuid() },
  });

  const take = async (step: Step, label: string, at: number) => {
    const tx = ours();
    emittedAt = at;
    switch (step.kind) {
      case 'signingUrl':
        await update(label, step.kind, (h) =>
          h.startUpdate(issueSigningUrlUpdate, {
            args: [{ participantIds: [participantIds[step.participant]!] }],
            waitForStage: WorkflowUpdateStage.ACCEPTED,
          }),
        );
        return;
      case 'replace':
        await update(label, step.kind, (h) =>
          h.startUpdate(replaceTransactionUpdate, { args: [{ status: step.status }], waitForStage: WorkflowUpdateStage.ACCEPTED }),
        );
        return;
      case 'cancel':
        await update(label, step.kind, (h) =>
          h.startUpdate(cancelUpdate, { args: [{ reason: 'cancelled by the explorer' }], waitForStage: WorkflowUpdateStage.ACCEPTED }),
        );
        return;
      case 'query':
        // Awaited: a query is answered at once, and after a restart it replays the history on the new worker.
        track(label, step.kind, handle().query(statusQuery));
        await inFlight[inFlight.length - 1];
        return;
      case 'view':
      case 'sign':
      case 'decline':
      case 'providerEnd':
        fates = [...step.webhooks];
        if (tx) {
          if (step.kind === 'view') model.view(tx.id, step.participant);
          else if (step.kind === 'sign') model.sign(tx.id, step.participant);
          else if (step.kind === 'decline') model.decline(tx.id, step.participant);
          else model.forceEnd(tx.id, step.status);
        }
        fates = [];
        return;
      case 'strayWebhook':
        await deliver(strayNotification(), 'direct');
        return;
      case 'restartWorker': {
        restarts++;
        await lane.restartWorker();
        // Each open workflow gets a webhook for another transaction (ignored, counted as rejected): its task then
        // leaves the dead worker's queue at once, before an update can. The test server mishandles an update that
        // comes in a task handed back that way (it refuses the next completion), which a real server never sees.
        const open: string[] = [];
        for (const id of [workflowId, ...model.byReference(referenceId).map((t) => inboxIdFor(t.id))]) {
          const stray = strayNotification('esign-declined');
          const sent = await (
            id === workflowId
              ? handle().signal(esignEventSignal, stray)
              : client.workflow.getHandle(id).signal(inboxNotificationSignal, stray)
          ).then(
            () => true,
            () => false,
          );
          if (sent) open.push(id);
        }
        await lane.moved(open);
        return;
      }
      case 'badZip':
        model.badZips = true;
        return;
      case 'fixZip':
        model.fixZips();
        if (features.retryArchive)
          await update(label, 'retryArchive', (h) =>
            h.startUpdate(retryArchiveUpdate, { args: [], waitForStage: WorkflowUpdateStage.ACCEPTED }),
          );
        return;
      case 'resend':
        if (tx?.status === 'draft') model.replace(tx.id, { status: 'esign_pending' }, 'someone outside the workflow');
        return;
    }
  };

  // ------------------------------------------------------------------ run
  const input = transactionInput(schedule, referenceId, participantIds);
  let end: WorkflowEnd | undefined;
  const histories: RecordedHistory[] = [];
  let atEnd: Observation['atEnd'] = [];
  const stillOpen: string[] = [];
  lane.register(run, activities);
  try {
    options.onPhase?.('starting the workflow');
    t0 = await now();
    try {
      if (schedule.setup.signingUrlWithStart) {
        // Update-with-start answers once the transaction exists: followed like any other update, not awaited.
        track(
          'signingUrl@start',
          'signingUrl',
          startEsignTransaction(client, input, { taskQueue, signingUrlFor: { participantIds: [participantIds[0]!] } }),
        );
        await waitUntilStarted(handle());
      } else {
        await startEsignTransaction(client, input, { taskQueue });
      }
    } catch (err) {
      end = { kind: 'not-started', message: errorText(err) };
    }

    if (!end) {
      for (const step of schedule.steps) enqueue(t0 + step.at, step.kind, () => take(step, stepLabel(step), t0 + step.at));
      // The steps, and the webhooks they send, in time order.
      while (queue.length > 0) {
        await advanceTo(queue[0]!.at);
        await runDue();
      }
      end = await driveToEnd();
      atEnd = model.byReference(referenceId).map((t) => ({ id: t.id, status: t.status, everSigned: t.everSigned }));

      // The late path: moves of the world after the end, then time for the inbox and a late completion to finish.
      const lateFrom = await now();
      schedule.late.forEach((step, i) =>
        enqueue(lateFrom + (i + 1) * MINUTE, `late ${step.kind}`, () => take(step, `late ${step.kind}`, lateFrom + (i + 1) * MINUTE)),
      );
      await settleAfterEnd(lateFrom);
    }
  } finally {
    options.onPhase?.('collecting histories');
    // Updates still waiting are answered (or refused) by now, or never will be: the workflow has ended.
    await Promise.race([Promise.allSettled(inFlight), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    if (end?.kind !== 'not-started') histories.push(...(await after.collectHistories().catch(() => [])));
    // Whatever is still running (a stalled run) stops here: its timers would otherwise fire in the next run's time.
    await after.terminateLeftovers();
    handedBack = await lane.forget(run);
  }
  return {
    schedule,
    referenceId,
    workflowId,
    end: end ?? { kind: 'not-started', message: 'the driver stopped before the start' },
    atEnd,
    model,
    messages,
    histories,
    stillOpen,
    directAfterEnd,
    restarts: { count: restarts, tasksHandedBack: handedBack },
    startedAt: t0,
    simulatedMs: (await now()) - t0,
  };

  // ---------------------------------------------------------------- phases

  /** Lets time run until the workflow ends; the provider ends what it still holds open past the deadline. */
  async function driveToEnd(): Promise<WorkflowEnd> {
    options.log?.('drive to end');
    options.onPhase?.('driving the workflow to its end');
    const { signingDeadlineMs, reconcileMaxIntervalMs } = schedule.setup;
    const slack = 2 * reconcileMaxIntervalMs + 30 * MINUTE;
    const providerExpiresAt = t0 + signingDeadlineMs + slack;
    const giveUpAt = providerExpiresAt + slack + 2 * HOUR;
    let repaired = false;
    let expired = false;
    for (;;) {
      const closed = await after.closedEnd();
      if (closed) return closed;
      const current = await now();
      if (current >= providerExpiresAt) {
        const tx = ours();
        // An operator repairs an archive that refused its ZIP (as the schedule's own fixZip would).
        if (!repaired && tx?.zip && !tx.zip.valid) {
          repaired = true;
          await take({ kind: 'fixZip' }, 'fixZip@drain', current);
        }
        if (!expired && tx && !ENDED.includes(tx.status)) {
          expired = true;
          // The provider's own expiry, announced by a webhook through the bridge (a poll finds it too).
          fates = [[{ via: 'bridge', afterMs: 0 }]];
          emittedAt = current;
          model.forceEnd(tx.id, 'expired');
          fates = [];
        }
      }
      if (current >= giveUpAt) return { kind: 'stalled', where: await after.whereItStalled() };
      // Checked every so often (each check costs a round trip; the workflow's own timers run in between).
      const every = Math.min(Math.max(reconcileMaxIntervalMs, 30 * MINUTE), 6 * HOUR);
      const next = Math.min(queue[0]?.at ?? Infinity, current + every, current >= providerExpiresAt ? giveUpAt : providerExpiresAt);
      await advanceTo(next);
      await runDue();
    }
  }

  /**
   * After the end: the late moves and their webhooks, then time for the inbox (it stays 3 days after its owner
   * ended, and one started by a webhook after that waits 7 for an owner) and a late completion to finish.
   */
  async function settleAfterEnd(from: number): Promise<void> {
    options.log?.('settle after end');
    options.onPhase?.('after the end (late moves, inbox, late completion)');
    while (queue.length > 0) {
      await advanceTo(queue[0]!.at);
      await runDue();
    }
    const last = Math.max(from, await now());
    for (const until of [last + 3 * DAY + HOUR, last + 8 * DAY]) {
      await advanceTo(until);
      if ((await after.openAfterEnd()).length === 0) return;
      await repairRefusedLateArchives();
    }
    stillOpen.push(...(await after.openAfterEnd()));
  }

  /**
   * A late completion whose ZIP was refused waits in archive_invalid for an operator, as the transaction does: the
   * operator repairs the ZIP and retries it (`esign retry-archive`), as the schedule's fixZip does for the transaction.
   */
  async function repairRefusedLateArchives(): Promise<void> {
    for (const t of model.byReference(referenceId)) {
      const late = client.workflow.getHandle(lateCompletionIdFor(t.id));
      const phase = await late.query(lateCompletionStatusQuery).then(
        (s) => s.phase,
        () => undefined,
      );
      if (phase !== 'archive_invalid') continue;
      options.log?.(`operator repairs the late completion of ${t.id}`);
      model.fixZips();
      await late.startUpdate(lateRetryArchiveUpdate, { args: [], waitForStage: WorkflowUpdateStage.ACCEPTED }).catch(() => undefined);
    }
  }
}

function stepLabel(step: TimedStep): string {
  return `${step.kind}@+${Math.round(step.at / 1000)}s`;
}

async function waitUntilStarted(handle: WorkflowHandle): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (
      await handle.describe().then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the workflow did not start within 2 s');
}
