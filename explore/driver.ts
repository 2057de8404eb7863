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
 *
 * The operator's and the server's moves (explore/schedule.ts `addOperations`) are steps like the others: a deploy or
 * a suggested continue-as-new gives the lane's pass-through a hint for a running run (explore/server-hints.ts), an
 * upkeep step starts an evidence upkeep walk (each is followed to its end after the last transaction), a terminate
 * stops the event log or a late completion where it is.
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import { WorkflowUpdateFailedError, WorkflowUpdateStage, type WorkflowHandle, type WorkflowUpdateHandle } from '@temporalio/client';
import { deliverNotification, OwnerLookupError, type OwnerDirectory } from '../src/bridge/deliver.js';
import { retryEsignArchive, startEsignTransaction } from '../src/client/transactions.js';
import { listEsignEvents, redeliverEsignEvents } from '../src/client/event-log.js';
import { notificationOf } from '../src/esign/events.js';
import type { EsignWebhook } from '../src/esign/schemas.js';
import {
  approveUpdate,
  cancelUpdate,
  correctTransactionUpdate,
  esignCompletedSignal,
  esignEventSignal,
  issueSigningUrlUpdate,
  rejectUpdate,
  replaceTransactionUpdate,
  statusQuery,
  workflowIdFor,
} from '../src/definitions/transaction.js';
import type { esignTransaction } from '../workflows/esign-transaction.js';
import { eventLogIdFor } from '../src/definitions/event-log.js';
import { inboxIdFor, inboxNotificationSignal } from '../src/definitions/inbox.js';
import { lateCompletionIdFor, lateCompletionStatusQuery, lateRetryArchiveUpdate } from '../src/definitions/late-completion.js';
import { CALLBACK_URL, createExplorerActivities } from './activities.js';
import { BULK_TEMPLATE_REF, bulkCsv, MemoryStore } from './bulk.js';
import {
  batchKeys,
  batchProgressQuery,
  BULK_WORKFLOW_TYPE,
  rowReferenceId,
  type BulkSendInput,
  type BulkSendWorkflow,
} from '../src/definitions/bulk.js';
import { EsignBatchId, EsignStatus } from '../src/definitions/search-attributes.js';
import { cancelBatch } from '../src/client/bulk.js';
import { Aftermath, errorText } from './aftermath.js';
import { retryArchiveUpdate, type WorkflowFeatures } from './features.js';
import { approverId, transactionInput } from './input.js';
import type { Lane } from './lane.js';
import type { MessageOutcome, Observation, PartRecord, RecordedHistory, WorkflowEnd } from './observation.js';
import { ENDED, ProviderModel, uuidFactory, type ModelTransaction } from './provider-model.js';
import type { TransactionCorrection } from '../src/definitions/corrections.js';
import type { Delivery, Schedule, ScheduleSetup, Step, TimedStep } from './schedule.js';
import type { ServerHintKind } from './server-hints.js';
import { UpkeepModel } from './upkeep.js';
import type { EvidenceUpkeepResult } from '../src/definitions/evidence-upkeep.js';
import { pendingTimerDeadlines, taskInFlight } from './timers.js';
import { queryRun } from './queries.js';
import { answeredDeadline } from './deadlines.js';
import { RecordsModel, type HoldMove, type RetentionWalk } from './records.js';
import { LEGAL_HOLDS_WORKFLOW_ID, LEGAL_HOLDS_WORKFLOW_TYPE } from '../src/definitions/records.js';
import { listLegalHolds, placeLegalHold, releaseLegalHold } from '../src/client/records.js';

/** Real time a step or an advance may take: a timer due sooner is fired first (see `settle`). */
const TIMER_MARGIN_MS = 2_000;
/** A signal no workflow handles: it only gives a run a workflow task (see the terminate step). */
const EXPLORER_NUDGE_SIGNAL = 'explorer.nudge';
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
  // A bulk schedule's batch: its id names the run (explore/lane.ts routes its and its rows' activities by it).
  const batchId = `bulk-x${schedule.seed}-r${run}`;
  const store = new MemoryStore();
  const rowReference = (row: number) => rowReferenceId(batchId, row + 2);
  const upkeep = new UpkeepModel(model);
  // Its retention walks and the holds register read the holds as a worker does, through the lane's client.
  const records = schedule.records ? new RecordsModel(schedule.records, () => listLegalHolds(client)) : undefined;
  const activities = createExplorerActivities({
    model,
    upkeep,
    ...(records ? { records } : {}),
    faults: schedule.faults,
    ...(schedule.bulk ? { bulk: { store, taskQueue: lane.taskQueue, crashMidPage: schedule.bulk.crashMidPage } } : {}),
  });
  let participantIds = Array.from({ length: schedule.setup.participants }, () => uuid());
  /** The schedule's transaction now running (0: the first; a reused referenceId's later ones count on). */
  let part = 0;
  let setup: ScheduleSetup = schedule.setup;
  const messages: MessageOutcome[] = [];
  const after = new Aftermath(client, workflowId, referenceId, model, messages);
  const inFlight: Promise<void>[] = [];
  let directAfterEnd = 0;
  let restarts = 0;
  let handedBack: number;
  const operations: NonNullable<Observation['operations']> = {
    hints: [],
    terminations: [],
    completionsAgain: [],
    upkeeps: [],
    upkeep,
    continuedAs: {},
    acted: {},
  };
  const tally = (kind: string) => void (operations.acted[kind] = (operations.acted[kind] ?? 0) + 1);
  // The pass-through reads the worker's tasks only for a schedule that gives hints.
  lane.hints.reset(givesHints(schedule));

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
  /** Whether the driver acted (a step, a webhook) since the workflows last settled. */
  let acted = true;
  const settle = async () => {
    for (let i = 0; i < 100; i++) {
      const ids = schedule.bulk
        ? [
            batchId,
            ...Array.from({ length: schedule.bulk.rows }, (_, r) => workflowIdFor(rowReference(r))),
            ...[...model.transactions.values()].map((t) => inboxIdFor(t.id)),
          ]
        : [workflowId, eventLogIdFor(referenceId), ...model.byReference(referenceId).map((t) => inboxIdFor(t.id))];
      ids.push(...operations.upkeeps.filter((u) => u.end.kind === 'stalled').map((u) => u.workflowId));
      if (records) ids.push(LEGAL_HOLDS_WORKFLOW_ID, ...records.walks.filter((w) => w.end.kind === 'stalled').map((w) => w.workflowId));
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
    // Settled already, and nothing done since (a drive loop only reads between its advances): no need to look again.
    if (acted) await settle();
    await sleepPastChildEnds(target - current);
    await settle();
    acted = false;
  };
  /**
   * `env.sleep`, past two test-server wedges, each of which keeps time skipping locked for good, so that the sleep never
   * returns: a child workflow (the event log, started by the transaction) that closes after its parent closed (a real
   * server ignores the parent), and a completion the server refused as of a closed run (explore/sticky-queues.ts,
   * TEST_SERVER_CLOSED_RUN), which dropped the release of its task's lock. A sleep that has not returned after a few
   * seconds of real time is given the lock of one such wedge back, once per wedge, and waited for again.
   */
  const sleepPastChildEnds = async (ms: number) => {
    const from = await now();
    const sleeping = env.sleep(ms);
    for (;;) {
      const done = await Promise.race([
        sleeping.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 3_000).unref()),
      ]);
      if (done) return;
      // Only a known wedge, and a sleep that is only slow (a busy machine, many timers) is waited for: unlocking it
      // would let time run on its own. First a completion refused as of a closed run, each of which leaked a lock.
      if (lane.refusedAsClosed - refusedAsClosedAtStart > unlockedForRefusals) {
        unlockedForRefusals++;
        options.log?.('the test server kept time skipping locked after it refused a completion as of a closed run: unlocking it');
        await env.connection.testService?.unlockTimeSkipping({});
        continue;
      }
      // Then a log of this referenceId closed during this sleep, and not yet given its lock back.
      const log = await client.workflow
        .getHandle(eventLogIdFor(referenceId))
        .describe()
        .catch(() => undefined);
      const closedAt = log?.closeTime?.getTime();
      // Closed on its own during this sleep; or terminated by the schedule's operator after its parent closed (before
      // this sleep, maybe: the terminate is a step).
      const wedged =
        (log?.status.name === 'COMPLETED' && closedAt !== undefined && closedAt >= from) ||
        (log?.status.name === 'TERMINATED' && closedAt !== undefined && (await parentClosedBefore(log.parentExecution, closedAt)));
      if (log && wedged && !unlockedFor.has(log.runId)) {
        unlockedFor.add(log.runId);
        options.log?.('the test server kept time skipping locked after the event log closed: unlocking it');
        await env.connection.testService?.unlockTimeSkipping({});
      }
    }
  };
  /** The completions the test server refused as of a closed run before this schedule, and the locks given back since. */
  const refusedAsClosedAtStart = lane.refusedAsClosed;
  let unlockedForRefusals = 0;
  /** The event log runs whose close wedged the test server's time skipping, each unlocked once. */
  const unlockedFor = new Set<string>();
  const parentClosedBefore = async (parent: { workflowId?: string | null; runId?: string | null } | undefined, at: number) => {
    if (!parent?.workflowId) return false;
    const closed = await client.workflow
      .getHandle(parent.workflowId, parent.runId ?? undefined)
      .describe()
      .then(
        (d) => d.closeTime?.getTime(),
        () => undefined,
      );
    return closed !== undefined && closed <= at;
  };
  const runDue = async () => {
    const current = await now();
    while (queue.length > 0 && queue[0]!.at <= current) {
      const next = queue.shift()!;
      options.log?.(`+${Math.round((next.at - t0) / 1000)}s (now +${Math.round((current - t0) / 1000)}s) ${next.what}`);
      options.onPhase?.(`${next.what} at +${Math.round((next.at - t0) / 1000)}s`);
      acted = true;
      await next.run();
    }
  };

  const handle = (): WorkflowHandle<typeof esignTransaction> => client.workflow.getHandle<typeof esignTransaction>(workflowId);
  const ours = () => model.byReference(referenceId).find((t) => t.part === part);

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

  /** Answers come back so far (a query must show what those said: `answersBefore`). */
  let answered = 0;
  const track = (step: string, kind: MessageOutcome['kind'], call: Promise<unknown>, extra: Partial<MessageOutcome> = {}) => {
    acted = true;
    const record: MessageOutcome = { step, kind, outcome: 'pending', ...(part > 0 || schedule.kind ? { part } : {}), ...extra };
    messages.push(record);
    inFlight.push(
      call.then(
        (value) => {
          record.answerOrder = ++answered;
          record.outcome = 'ok';
          record.value = value;
          if (schedule.kind) record.deliveriesAtAnswer = model.deliveries.length;
        },
        (err: unknown) => {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          record.answerOrder = ++answered;
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
    extra: Partial<MessageOutcome> = {},
  ) => {
    const accepted = send(handle());
    track(
      label,
      kind,
      accepted.then((u) => u.result()),
      extra,
    );
    await Promise.race([accepted.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  };

  /**
   * The correction a step asks for, of the participant at its position in the provider's record as it is now (which
   * the workflow may not know yet: a race the validator or the provider must settle).
   */
  let corrections = 0;
  const correction = (step: Extract<Step, { kind: 'correct' }>, tx: ModelTransaction | undefined): TransactionCorrection => {
    const ids = tx ? tx.body.participants.map((p) => p.id) : participantIds;
    const participantId = ids[step.participant % ids.length]!;
    const n = ++corrections;
    const person = { firstName: 'Grace', lastName: `Hopper${n}`, email: `grace${n}@example.com` };
    const asked = { by: 'explorer:operator' };
    switch (step.correction) {
      case 'reassign':
        return { kind: 'reassign', ...asked, participantId, to: { ...person, id: uuid() } };
      case 'contact':
        return { kind: 'contact', ...asked, participantId, email: person.email, newId: uuid() };
      case 'addSigner':
        return {
          kind: 'addSigner',
          ...asked,
          participant: { ...person, id: uuid(), authenticationType: 'none', twoFactorContact: 'email' },
          tags: [{ document: 0, type: 'SIGNATURETEMPLATE', x: 72, y: 400 + 40 * n, width: 200, height: 30, page: 0 }],
        };
      case 'removeSigner':
        return { kind: 'removeSigner', ...asked, participantId };
      case 'deadline':
        return { kind: 'deadline', ...asked, deadline: new Date(emittedAt + step.deadlineMs).toISOString() };
      case 'resend':
        return { kind: 'resend', ...asked, participantId };
    }
  };

  /** A webhook for a transaction that is not this one's (the workflow and its inbox must ignore it). */
  const strayNotification = (event: 'esign-completed' | 'esign-declined' = 'esign-completed'): EsignWebhook =>
    notificationOf(event, { notificationId: uuid(), esignId: uuid(), transactionId: uuid() });

  const take = async (step: Step, label: string, at: number) => {
    acted = true;
    const row = 'row' in step ? step.row : undefined;
    const tx = row === undefined ? ours() : model.byReference(rowReference(row))[0];
    emittedAt = at;
    switch (step.kind) {
      case 'signingUrl':
        await update(
          label,
          step.kind,
          (h) =>
            h.startUpdate(issueSigningUrlUpdate, {
              args: [{ participantIds: [participantIds[step.participant]!] }],
              waitForStage: WorkflowUpdateStage.ACCEPTED,
            }),
          { participantId: participantIds[step.participant]! },
        );
        return;
      case 'replace':
        await update(
          label,
          step.kind,
          (h) => h.startUpdate(replaceTransactionUpdate, { args: [{ status: step.status }], waitForStage: WorkflowUpdateStage.ACCEPTED }),
          { asked: step.status },
        );
        return;
      case 'cancel':
        await update(label, step.kind, (h) =>
          h.startUpdate(cancelUpdate, { args: [{ reason: 'cancelled by the explorer' }], waitForStage: WorkflowUpdateStage.ACCEPTED }),
        );
        return;
      case 'correct': {
        const asked = correction(step, tx);
        await update(
          label,
          step.kind,
          (h) => h.startUpdate(correctTransactionUpdate, { args: [asked], waitForStage: WorkflowUpdateStage.ACCEPTED }),
          { asked: step.correction, ...(asked.kind === 'deadline' ? { deadline: asked.deadline } : {}) },
        );
        return;
      }
      case 'approve':
        await update(
          label,
          step.kind,
          (h) =>
            h.startUpdate(approveUpdate, {
              args: [
                { approverId: approverId(step.approver), ...(step.approver % 2 === 0 ? { comment: 'approved by the explorer' } : {}) },
              ],
              waitForStage: WorkflowUpdateStage.ACCEPTED,
            }),
          { approverId: approverId(step.approver) },
        );
        return;
      case 'reject':
        await update(
          label,
          step.kind,
          (h) =>
            h.startUpdate(rejectUpdate, {
              args: [{ approverId: approverId(step.approver), reason: 'rejected by the explorer' }],
              waitForStage: WorkflowUpdateStage.ACCEPTED,
            }),
          { approverId: approverId(step.approver) },
        );
        return;
      case 'query':
        // Awaited: a query is answered within the task it lands in, and after a restart it replays the history on the
        // new worker; one the test server lost is given up (explore/queries.ts).
        track(
          label,
          step.kind,
          queryRun(client, workflowId, statusQuery, () => lane.refusedAsClosed),
          { answersBefore: answered },
        );
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
      case 'restartWorker':
        await restartWorker();
        return;
      case 'deploy': {
        // The pinned runs learn that the target changed; the auto-upgrade ones move to the new version's worker.
        const pinned = schedule.bulk
          ? [batchId, ...Array.from({ length: schedule.bulk.rows }, (_, r) => workflowIdFor(rowReference(r)))]
          : [workflowId];
        for (const id of pinned) await hint('targetVersionChanged', id, step.kind);
        if (step.restart) await restartWorker();
        return;
      }
      case 'suggestContinueAsNew':
        await hint(
          'suggestContinueAsNew',
          step.workflow === 'transaction' ? workflowId : step.workflow === 'batch' ? batchId : eventLogIdFor(referenceId),
          step.kind,
        );
        return;
      case 'upkeep': {
        upkeep.evidence = step.evidence;
        upkeep.authority = step.authority;
        upkeep.addOthers(step.others);
        const keysAtStart = upkeep.keys();
        const id = `esign-upkeep-x${schedule.seed}-${run}-${operations.upkeeps.length + 1}`;
        const started = await client.workflow.start('evidenceUpkeep', { workflowId: id, taskQueue, args: [{}] });
        operations.upkeeps.push({
          workflowId: id,
          startedAt: await now(),
          keysAtStart,
          renewalsAtStart: Object.fromEntries(upkeep.archives().map((a) => [a.key, a.renewals.length])),
          end: { kind: 'stalled', where: 'still walking when the schedule ended' },
        });
        if (step.suggestContinueAsNew) give('suggestContinueAsNew', id, started.firstExecutionRunId, step.kind, await now());
        tally(step.kind);
        return;
      }
      case 'terminate': {
        const id = step.workflow === 'eventLog' ? eventLogIdFor(referenceId) : tx ? lateCompletionIdFor(tx.id) : undefined;
        if (!id) return;
        const h = client.workflow.getHandle(id);
        const running = await h.describe().then(
          (d) => d.status.name === 'RUNNING',
          () => false,
        );
        // After a restart, an event log's next task waits on the dead worker's queue, and so, once it is closed,
        // would every query of it (the transaction reads a closed log's last number so): the test server has no
        // sticky timeout to move them, as a real server does after a few seconds. A signal it has no handler for
        // (buffered, never read) moves it to the live worker first; the terminate waits for that task.
        if (running && restarts > 0 && step.workflow === 'eventLog') await h.signal(EXPLORER_NUDGE_SIGNAL).catch(() => undefined);
        // `temporal workflow terminate`: the run ends where it is, with no say (once its task in flight is done).
        const terminated = running && (await lane.terminate(id, "terminated by the explorer's operator"));
        operations.terminations.push({
          workflow: step.workflow,
          workflowId: id,
          at: await now(),
          terminated,
          ...(tx && step.workflow === 'lateCompletion' ? { transactionId: tx.id } : {}),
        });
        if (terminated) tally(`terminate ${step.workflow}`);
        return;
      }
      case 'completionAgain':
        if (!tx) return;
        fates = [[{ via: 'bridge', afterMs: 0 }]];
        if (model.completionAgain(tx.id)) {
          operations.completionsAgain.push({ transactionId: tx.id, at });
          tally(step.kind);
        }
        fates = [];
        return;
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
      case 'endpointDown':
        model.endpointDown = true;
        return;
      case 'endpointUp':
        model.endpointDown = false;
        return;
      case 'providerDown':
        model.down.set(step.operation, step.status);
        return;
      case 'providerUp':
        model.down.delete(step.operation);
        return;
      case 'purge':
        for (const t of model.byReference(referenceId)) model.purge(t.id);
        return;
      case 'redeliver': {
        // The operator's command: to the running log, or a new run of a closed one from its last view.
        const asked = redeliverEsignEvents(client, referenceId, { after: step.after }, { taskQueue });
        track(label, 'redeliver', asked, { after: step.after, deliveriesAtAsk: model.deliveries.length });
        await Promise.race([inFlight[inFlight.length - 1], new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        return;
      }
      case 'bulkCancel': {
        // `esign bulk cancel` (src/client/bulk.ts): refused once the batch has ended.
        track(label, 'bulkCancel', cancelBatch(client, batchId, 'cancelled by the explorer'));
        await Promise.race([inFlight[inFlight.length - 1], new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        return;
      }
      case 'hold': {
        if (!records) return;
        // The transaction once it exists (else nothing to name), its referenceId (a bulk send: its first row's), its batch.
        const target =
          step.scope === 'batch' ? batchId : step.scope === 'reference' ? (schedule.bulk ? rowReference(0) : referenceId) : tx?.id;
        if (!target) return;
        if (step.suggest) await hint('suggestContinueAsNew', LEGAL_HOLDS_WORKFLOW_ID, 'suggest register');
        const move: HoldMove = { step: label, scope: step.scope, target, sentSeq: records.tick() };
        records.moves.push(move);
        const request = { scope: step.scope, target, reason: 'held by the explorer', by: 'explorer:operator' };
        const asked = placeLegalHold(client, request, { taskQueue }).then(
          (hold) => void (move.placed = { outcome: 'ok', hold, seq: records.tick() }),
          (err: unknown) => void (move.placed = { outcome: 'error', message: errorText(err) }),
        );
        inFlight.push(asked);
        tally('hold');
        await Promise.race([asked, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        return;
      }
      case 'releaseHold': {
        const move = records?.moves.find((m) => m.placed?.outcome === 'ok' && !m.release);
        if (!records || move?.placed?.outcome !== 'ok') return;
        const release: NonNullable<HoldMove['release']> = { askedSeq: records.tick(), outcome: 'pending' };
        move.release = release;
        const asked = releaseLegalHold(client, {
          holdId: move.placed.hold.id,
          reason: 'released by the explorer',
          by: 'explorer:operator',
        }).then(
          () => void (release.outcome = 'ok'),
          (err: unknown) => {
            release.outcome = 'error';
            release.message = errorText(err);
          },
        );
        inFlight.push(asked);
        tally('release hold');
        await Promise.race([asked, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        return;
      }
      case 'retention':
        if (!records) return;
        await startRetention(false);
        tally('retention walk');
        return;
      case 'operatorRetry': {
        // `esign retry-archive <referenceId>` before anyone fixed anything: refused again, or refused as not waiting.
        track(label, 'retryArchive', retryEsignArchive(client, referenceId), { refusalsAtAsk: model.refusals.length });
        await Promise.race([inFlight[inFlight.length - 1], new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        return;
      }
    }
  };

  /** The worker stops and a new one starts with an empty cache; each open workflow's next task goes to it. */
  async function restartWorker(): Promise<void> {
    restarts++;
    await lane.restartWorker();
    // Each open workflow gets a webhook for another transaction (ignored, counted as rejected): its task then
    // leaves the dead worker's queue at once, before an update can. The test server mishandles an update that
    // comes in a task handed back that way (it refuses the next completion), which a real server never sees.
    const open: string[] = [];
    if (records) {
      // The holds register takes updates too: a signal it has no handler for moves its task first.
      const nudged = await client.workflow
        .getHandle(LEGAL_HOLDS_WORKFLOW_ID)
        .signal(EXPLORER_NUDGE_SIGNAL)
        .then(
          () => true,
          () => false,
        );
      if (nudged) open.push(LEGAL_HOLDS_WORKFLOW_ID);
    }
    for (const id of [workflowId, ...model.byReference(referenceId).map((t) => inboxIdFor(t.id))]) {
      const stray = strayNotification('esign-declined');
      const sent = await (
        id === workflowId ? handle().signal(esignEventSignal, stray) : client.workflow.getHandle(id).signal(inboxNotificationSignal, stray)
      ).then(
        () => true,
        () => false,
      );
      if (sent) open.push(id);
    }
    await lane.moved(open);
  }

  /** Gives a hint to a workflow's current run, if it runs. */
  async function hint(kind: ServerHintKind, id: string, by: string): Promise<void> {
    const described = await client.workflow
      .getHandle(id)
      .describe()
      .catch(() => undefined);
    if (described?.status.name !== 'RUNNING') return;
    give(kind, id, described.runId, by, await now());
  }

  function give(kind: ServerHintKind, id: string, runId: string, by: string, at: number): void {
    const given = lane.hints.give(kind, id, runId);
    if (operations.hints.some((h) => h.runId === runId && h.kind === kind)) return;
    // A bulk row polls at most every 6 hours (the input's default: the batch gives only the interval).
    operations.hints.push({
      ...given,
      at,
      maxPollMs: schedule.bulk ? Math.max(setup.reconcileMaxIntervalMs, 6 * HOUR) : setup.reconcileMaxIntervalMs,
    });
    tally(by);
  }

  // ------------------------------------------------------------------ run
  /** Ends a workflow of this run still running when the schedule is over. */
  const endRun = (id: string) => lane.terminate(id, 'the explorer ended this run');
  let end: WorkflowEnd | undefined;
  const histories: RecordedHistory[] = [];
  let atEnd: Observation['atEnd'] = [];
  const stillOpen: string[] = [];
  const parts: PartRecord[] = [];
  let eventLog: Observation['eventLog'];
  let eventLogError: string | undefined;
  let bulk: Observation['bulk'];
  if (records) {
    // A register of its own, running from the start: every read of the holds (a purge's, the archive's) then goes to
    // a run on this schedule's worker, never to an earlier schedule's closed run, whose tasks may wait on the queue
    // of a worker restarted since (explore/sticky-queues.ts).
    await endRun(LEGAL_HOLDS_WORKFLOW_ID);
    await client.workflow.start(LEGAL_HOLDS_WORKFLOW_TYPE, { workflowId: LEGAL_HOLDS_WORKFLOW_ID, taskQueue, args: [] });
    // The earlier transactions' archives, already there: the walks list them as they list every archive.
    const start = await now();
    for (let i = 0; i < (schedule.records?.earlier ?? 0); i++) {
      const transactionId = `${referenceId}-earlier-${i + 1}`;
      const earlier = {
        key: transactionId,
        transactionId,
        referenceId: schedule.bulk ? rowReference(i) : referenceId,
        ...(schedule.bulk ? { batchId } : {}),
        sha256: transactionId.padEnd(64, '0'),
      };
      records.committed(earlier, start - (i * records.setup.retentionMs) / 2);
      upkeep.addArchive(earlier.key, earlier.sha256);
    }
  }
  lane.register(run, activities);
  try {
    if (schedule.bulk) bulk = await runBatch(schedule.bulk);
    const transactions = schedule.bulk
      ? []
      : [{ setup: schedule.setup, steps: schedule.steps, late: schedule.late, gapMs: 0 }, ...(schedule.next ?? [])];
    for (const [i, next] of transactions.entries()) {
      if (i > 0) {
        // The next transaction with this referenceId, once the one before ended and its late path settled.
        if (end?.kind !== 'result') break;
        part = i;
        model.part = i;
        setup = next.setup;
        participantIds = Array.from({ length: setup.participants }, () => uuid());
        fates = [];
        await advanceTo((await now()) + next.gapMs);
        end = undefined;
      }
      const record = await runPart(next.steps, next.late);
      parts.push(record);
      end = record.end;
      if (i === 0) atEnd = record.atEnd;
    }
    if (parts.length > 0 && schedule.setup.callback) {
      // The endpoint is back and the log sends what is pending (also a delivery whose attempt failed and waits for
      // its retry, which the run's end can outpace); then its whole view, to check the numbering.
      options.onPhase?.('reading the event log');
      model.endpointDown = false;
      for (let waited = 0; waited < 3; waited++) {
        const view = await listEsignEvents(client, referenceId).catch((err: unknown) => {
          eventLogError = errorText(err);
          return undefined;
        });
        eventLog = view;
        if (!view?.events.some((e) => e.state === 'pending')) break;
        await advanceTo((await now()) + HOUR);
      }
    }
    await finishUpkeeps();
    await finishRecords();
  } finally {
    options.onPhase?.('collecting histories');
    // Updates still waiting are answered (or refused) by now, or never will be: the workflow has ended.
    await Promise.race([Promise.allSettled(inFlight), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    if (schedule.bulk) {
      histories.push(...(await batchHistories().catch(() => [])));
      await terminateBatch();
    } else {
      if (end?.kind !== 'not-started') histories.push(...(await after.collectHistories().catch(() => [])));
      // Whatever is still running (a stalled run) stops here: its timers would otherwise fire in the next run's time.
      await after.terminateLeftovers(endRun);
    }
    for (const walk of operations.upkeeps) {
      histories.push(...(await chainOf(walk.workflowId).catch(() => [] as RecordedHistory[])));
      await endRun(walk.workflowId);
    }
    if (records) {
      for (const walk of records.walks) {
        histories.push(...(await chainOf(walk.workflowId).catch(() => [] as RecordedHistory[])));
        await endRun(walk.workflowId);
      }
      // The register's runs of this schedule, back to the one it started.
      histories.push(...(await chainOf(LEGAL_HOLDS_WORKFLOW_ID).catch(() => [] as RecordedHistory[])));
      await endRun(LEGAL_HOLDS_WORKFLOW_ID);
    }
    handedBack = await lane.forget(run);
  }
  return observed();

  async function observed(): Promise<Observation> {
    const first = parts[0];
    // The earlier transactions' runs were collected as each ended; the last's chain (and every other workflow) just now.
    const earlier = parts.slice(0, -1).flatMap((p) => p.histories);
    // What the server told the runs is in their histories, as a real server records it (explore/server-hints.ts).
    for (const h of [...earlier, ...histories]) lane.hints.patchHistory(h.runId, h.history);
    operations.continuedAs = Object.fromEntries(lane.hints.continuedAs);
    return {
      schedule,
      referenceId,
      workflowId,
      end: first?.end ?? end ?? { kind: 'not-started', message: 'the driver stopped before the start' },
      atEnd,
      model,
      messages,
      histories: [...earlier, ...histories],
      stillOpen,
      directAfterEnd,
      restarts: { count: restarts, tasksHandedBack: handedBack },
      startedAt: first?.startedAt ?? t0,
      simulatedMs: (await now()) - (first?.startedAt ?? t0),
      ...(!schedule.bulk ? { parts } : {}),
      ...(eventLog ? { eventLog } : {}),
      ...(eventLogError && !eventLog ? { eventLogError } : {}),
      operations,
      ...(bulk ? { bulk } : {}),
      ...(records ? { records } : {}),
    };
  }

  /** A bulk send: its CSV in the store, its start, the steps, its end and each row's, then a cancel after the end. */
  async function runBatch(setupOfBatch: NonNullable<Schedule['bulk']>): Promise<NonNullable<Observation['bulk']>> {
    const csvKey = batchKeys.upload(`explorer-${batchId}`);
    await store.put(csvKey, bulkCsv(setupOfBatch.rows));
    const minutes = (ms: number) => `${Math.round(ms / 60_000)} minutes`;
    const input: BulkSendInput = {
      batchId,
      name: batchId,
      template: BULK_TEMPLATE_REF,
      csvKey,
      maxInFlight: setupOfBatch.maxInFlight,
      taskQueue,
      signingDeadline: minutes(setup.signingDeadlineMs),
      reconcileInterval: minutes(setup.reconcileIntervalMs),
      ...(setup.callback ? { callbackUrl: CALLBACK_URL } : {}),
    };
    options.onPhase?.('starting the batch');
    acted = true;
    t0 = await now();
    await client.workflow.start<BulkSendWorkflow>(BULK_WORKFLOW_TYPE, {
      workflowId: batchId,
      taskQueue,
      args: [input],
      typedSearchAttributes: [
        { key: EsignBatchId, value: batchId },
        { key: EsignStatus, value: 'batch_preparing' },
      ],
    });
    for (const step of schedule.steps) enqueue(t0 + step.at, step.kind, () => take(step, stepLabel(step), t0 + step.at));
    while (queue.length > 0) {
      await advanceTo(queue[0]!.at);
      await runDue();
    }
    // Until the batch ends: each row ends by its deadline at the latest; past it the provider expires what is open.
    options.onPhase?.('driving the batch to its end');
    const slack = 2 * setup.reconcileMaxIntervalMs + 30 * MINUTE;
    // Not before the last step, as for a transaction (driveToEnd): the bound counts from the provider's expiry.
    const providerExpiresAt = Math.max(t0 + setup.signingDeadlineMs + slack, await now());
    const giveUpAt = providerExpiresAt + slack + 2 * HOUR;
    const batch = client.workflow.getHandle<BulkSendWorkflow>(batchId);
    let batchEnd: NonNullable<Observation['bulk']>['end'] | undefined;
    let expired = false;
    while (!batchEnd) {
      const status = (await batch.describe()).status.name;
      if (status !== 'RUNNING' && status !== 'CONTINUED_AS_NEW') {
        batchEnd = await batch.result().then(
          (result) => ({ kind: 'result' as const, result }),
          (err: unknown) => ({ kind: 'failed' as const, type: undefined, message: errorText(err) }),
        );
        break;
      }
      const current = await now();
      if (current >= providerExpiresAt && !expired) {
        expired = true;
        model.down.clear();
        fates = [];
        emittedAt = current;
        for (const t of model.transactions.values()) if (!ENDED.includes(t.status)) model.forceEnd(t.id, 'expired');
      }
      if (current >= giveUpAt) {
        const progress = await batch.query(batchProgressQuery).catch(() => undefined);
        batchEnd = { kind: 'stalled', where: `the batch is ${progress ? JSON.stringify(progress) : 'not answering'}` };
        break;
      }
      const next = Math.min(queue[0]?.at ?? Infinity, current + 30 * MINUTE, current >= providerExpiresAt ? giveUpAt : providerExpiresAt);
      await advanceTo(next);
      await runDue();
    }
    // Each row's end, then a cancel after the batch's.
    const rows: NonNullable<Observation['bulk']>['rows'] = [];
    for (let r = 0; r < setupOfBatch.rows; r++) {
      const ref = rowReference(r);
      const h = client.workflow.getHandle<typeof esignTransaction>(workflowIdFor(ref));
      const described = await h.describe().catch(() => undefined);
      let rowEnd: WorkflowEnd | undefined;
      if (described && described.status.name !== 'RUNNING' && described.status.name !== 'CONTINUED_AS_NEW') {
        rowEnd = await h.result().then(
          (result) => ({ kind: 'result' as const, result, ...(described.closeTime ? { closedAt: described.closeTime.getTime() } : {}) }),
          (err: unknown) => ({ kind: 'failed' as const, type: undefined, message: errorText(err) }),
        );
      } else if (described) rowEnd = { kind: 'stalled', where: `row ${r + 2}'s transaction is still ${described.status.name}` };
      rows.push({
        referenceId: ref,
        ...(rowEnd ? { end: rowEnd } : {}),
        ...(described ? { startedAt: described.startTime.getTime() } : {}),
      });
    }
    const lateFrom = await now();
    schedule.late.forEach((step, i) =>
      enqueue(lateFrom + (i + 1) * MINUTE, `late ${step.kind}`, () => take(step, `late ${step.kind}`, lateFrom + (i + 1) * MINUTE)),
    );
    while (queue.length > 0) {
      await advanceTo(queue[0]!.at);
      await runDue();
    }
    return { batchId, end: batchEnd, rows };
  }

  /**
   * Each upkeep walk to its end: it runs in the schedule's time, so most have ended; one whose authority was down
   * retries for a while. A walk not over a day later did not end.
   */
  async function finishUpkeeps(): Promise<void> {
    for (const walk of operations.upkeeps) walk.end = await walkToEnd<EvidenceUpkeepResult>(walk.workflowId, 'upkeep walk');
  }

  /** A walk (an upkeep's, a retention's) followed to its end, in the schedule's time; one not over a day later did not end. */
  async function walkToEnd<R>(
    workflowId: string,
    what: string,
  ): Promise<{ kind: 'result'; result: R; closedAt?: number } | { kind: 'failed'; message: string } | { kind: 'stalled'; where: string }> {
    options.onPhase?.(`waiting for the ${what} ${workflowId}`);
    const h = client.workflow.getHandle(workflowId);
    const giveUpAt = (await now()) + DAY;
    for (;;) {
      const described = await h.describe();
      if (described.status.name !== 'RUNNING') {
        return h.result().then(
          (result: R) => ({ kind: 'result' as const, result, ...(described.closeTime ? { closedAt: described.closeTime.getTime() } : {}) }),
          (err: unknown) => ({ kind: 'failed' as const, message: errorText(err) }),
        );
      }
      if ((await now()) >= giveUpAt)
        return { kind: 'stalled', where: `still walking a day after the schedule's end (${described.historyLength} events)` };
      await advanceTo((await now()) + 10 * MINUTE);
      await runDue();
    }
  }

  /** Starts a records retention walk (`recordsRetention`, as its Temporal Schedule does). */
  async function startRetention(final: boolean): Promise<void> {
    const id = `esign-retention-x${schedule.seed}-${run}-${records!.walks.length + 1}`;
    await client.workflow.start('recordsRetention', { workflowId: id, taskQueue, args: [{}] });
    records!.walks.push({ workflowId: id, final, end: { kind: 'stalled', where: 'still walking when the schedule ended' } });
  }

  /** Each retention walk to its end. */
  async function finishRetention(): Promise<void> {
    for (const walk of records!.walks) {
      if (walk.end.kind === 'stalled')
        walk.end = await walkToEnd<Extract<RetentionWalk['end'], { kind: 'result' }>['result']>(walk.workflowId, 'retention walk');
    }
  }

  /**
   * The records at rest: the walks ended, the register idle (a store that refused to hold is asked again an hour
   * later), its holds read; then a last walk past every archive's retention.
   */
  async function finishRecords(): Promise<void> {
    if (!records) return;
    await finishRetention();
    options.onPhase?.('letting the holds register come to rest');
    await advanceTo((await now()) + 2 * HOUR);
    for (let i = 0; i < 6; i++) {
      const described = await client.workflow
        .getHandle(LEGAL_HOLDS_WORKFLOW_ID)
        .describe()
        .catch(() => undefined);
      if (described?.status.name !== 'RUNNING' || (described.raw.pendingActivities ?? []).length === 0) break;
      await advanceTo((await now()) + HOUR);
    }
    // Every hold and release answered before the read (one still on its way makes the rest unjudged).
    const settled = records.moves.every((m) => m.placed !== undefined && m.release?.outcome !== 'pending');
    const read = await listLegalHolds(client).then(
      (holds) => ({ holds }),
      (err: unknown) => ({ holds: [], holdsError: errorText(err) }),
    );
    const beforeLastWalk = records.archives();
    if (beforeLastWalk.length > 0) {
      const until = Math.max(...beforeLastWalk.map((a) => Date.parse(a.manifest.retention?.until ?? '') || 0));
      await advanceTo(until + MINUTE);
      await startRetention(true);
      await finishRetention();
    }
    options.log?.(
      `records at rest: ${beforeLastWalk.length} archive(s), ${read.holds.length} hold(s), ${records.purges.length} purge attempt(s)`,
    );
    records.atRest = {
      ...read,
      settled,
      beforeLastWalk,
      afterLastWalk: records.archives().map(({ key, purged, objectHold }) => ({ key, purged, objectHold })),
    };
  }

  /** Every run of a workflow, following continue-as-new back from the last. */
  async function chainOf(id: string): Promise<RecordedHistory[]> {
    let runId: string | undefined = (await client.workflow.getHandle(id).describe()).runId;
    const runs: RecordedHistory[] = [];
    while (runId) {
      const history = await client.workflow.getHandle(id, runId).fetchHistory();
      runs.unshift({ workflowId: id, runId, history });
      runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    }
    return runs;
  }

  /** The batch's runs and each row transaction's, with their event logs, inboxes and late completions. */
  async function batchHistories(): Promise<RecordedHistory[]> {
    const out: RecordedHistory[] = [];
    out.push(...(await chainOf(batchId)));
    for (let r = 0; r < (schedule.bulk?.rows ?? 0); r++)
      out.push(...(await chainOf(workflowIdFor(rowReference(r))).catch(() => [] as RecordedHistory[])));
    return out;
  }

  async function terminateBatch(): Promise<void> {
    const ids = [
      batchId,
      ...Array.from({ length: schedule.bulk?.rows ?? 0 }, (_, r) => [
        workflowIdFor(rowReference(r)),
        eventLogIdFor(rowReference(r)),
      ]).flat(),
      ...[...model.transactions.values()].flatMap((t) => [inboxIdFor(t.id), lateCompletionIdFor(t.id)]),
    ];
    for (const id of ids) await endRun(id);
  }

  /** One transaction of the schedule: start, steps, its end, its late moves and their aftermath. */
  async function runPart(steps: readonly TimedStep[], late: readonly Step[]): Promise<PartRecord> {
    const input = transactionInput({ ...schedule, setup }, referenceId, participantIds);
    let partEnd: WorkflowEnd | undefined;
    let partAtEnd: Observation['atEnd'] = [];
    options.onPhase?.(part > 0 ? `starting transaction ${part + 1}` : 'starting the workflow');
    acted = true;
    t0 = await now();
    try {
      if (setup.signingUrlWithStart && (input.status === 'draft' || input.approval)) {
        // Nothing to sign until it is sent: the client refuses the URL before anything starts, and the caller then
        // starts it without one.
        const refused = startEsignTransaction(client, input, { taskQueue, signingUrlFor: { participantIds: [participantIds[0]!] } });
        track('signingUrl@start', 'signingUrl', refused, { participantId: participantIds[0]! });
        await refused.catch(() => undefined);
        await startEsignTransaction(client, input, { taskQueue });
      } else if (setup.signingUrlWithStart) {
        // Update-with-start answers once the transaction exists: followed like any other update, not awaited.
        track(
          'signingUrl@start',
          'signingUrl',
          startEsignTransaction(client, input, { taskQueue, signingUrlFor: { participantIds: [participantIds[0]!] } }),
          { participantId: participantIds[0]! },
        );
        await waitUntilStarted(handle());
      } else {
        await startEsignTransaction(client, input, { taskQueue });
      }
    } catch (err) {
      partEnd = { kind: 'not-started', message: errorText(err) };
    }
    let chain: RecordedHistory[] = [];
    if (!partEnd) {
      const prefix = part > 0 ? `t${part + 1} ` : '';
      for (const step of steps)
        enqueue(t0 + step.at, `${prefix}${step.kind}`, () => take(step, `${prefix}${stepLabel(step)}`, t0 + step.at));
      // The steps, and the webhooks they send, in time order.
      while (queue.length > 0) {
        await advanceTo(queue[0]!.at);
        await runDue();
      }
      partEnd = await driveToEnd();
      partAtEnd = model.byReference(referenceId).map((t) => ({ id: t.id, status: t.status, everSigned: t.everSigned }));
      // The late path: moves of the world after the end, then time for the inbox and a late completion to finish.
      const lateFrom = await now();
      late.forEach((step, i) => {
        // A minute apart, in order; an operator's move may come hours later (its delay).
        const at = lateFrom + (i + 1) * MINUTE + ('delayMs' in step ? (step.delayMs ?? 0) : 0);
        enqueue(at, `${prefix}late ${step.kind}`, () => take(step, `${prefix}late ${step.kind}`, at));
      });
      await settleAfterEnd(lateFrom);
      // A reused referenceId's next transaction is a new chain of runs: this one's is collected now.
      if (schedule.next && schedule.next.length > part) chain = await after.transactionRuns().catch(() => []);
    }
    return {
      setup,
      end: partEnd,
      atEnd: partAtEnd,
      participantIds,
      startedAt: t0,
      ...(partEnd.kind === 'result' && partEnd.closedAt !== undefined ? { closedAt: partEnd.closedAt } : {}),
      histories: chain,
    };
  }

  // ---------------------------------------------------------------- phases

  /** Lets time run until the workflow ends; the provider ends what it still holds open past the deadline. */
  async function driveToEnd(): Promise<WorkflowEnd> {
    options.log?.('drive to end');
    options.onPhase?.('driving the workflow to its end');
    const { signingDeadlineMs, reconcileMaxIntervalMs } = setup;
    const slack = 2 * reconcileMaxIntervalMs + 30 * MINUTE;
    // Not before the last step: a step may land well past the deadline (a signing-URL endpoint that comes back at
    // 1.5 times it), and the provider expires only what it still holds once the steps are over. The bound counts
    // from that expiry, so the workflow gets its slack to see it (a bound counted from the deadline alone gave up
    // on an overdue workflow the instant the provider expired it: explore/regressions/step-past-the-give-up-bound.json).
    // The deadline as the corrections' answers say (explore/deadlines.ts): the workflow waits for the latest that may
    // be in force. Read at each turn: a correction's answer may still be on its way when the drive begins.
    const startedDriving = await now();
    const bounds = () => {
      const { answered, uncertain } = answeredDeadline(messages, part);
      // Only ever later than the input's: a shortened deadline the workflow ignored must still show as held past it.
      const latest = Math.max(t0 + signingDeadlineMs, answered ?? -Infinity, ...uncertain);
      const providerExpiresAt = Math.max(latest + slack, startedDriving);
      return { providerExpiresAt, giveUpAt: providerExpiresAt + slack + 2 * HOUR };
    };
    let repaired = false;
    let expired = false;
    for (;;) {
      const closed = await after.closedEnd();
      if (closed) return closed;
      const current = await now();
      const { providerExpiresAt, giveUpAt } = bounds();
      if (current >= providerExpiresAt) {
        const tx = ours();
        // The provider's outages end (an endpoint that kept failing is fixed), so an overdue workflow can end.
        if (schedule.kind) model.down.clear();
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
    // Nothing left open (no inbox, no late completion), and nothing queued: no time to let pass.
    if ((await after.openAfterEnd()).length === 0) return;
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
      // Only a running one waits: a query of a closed run still answers the phase it ended in, so one the schedule's
      // operator terminated in archive_invalid (an earlier transaction's, under reuse) would be "repaired" and retried,
      // and nothing of its id waits any more (retryEsignArchive says so: LateCompletionEnded).
      const running = await late.describe().then(
        (d) => d.status.name === 'RUNNING',
        () => false,
      );
      if (!running) continue;
      const phase = await late.query(lateCompletionStatusQuery).then(
        (s) => s.phase,
        () => undefined,
      );
      if (phase !== 'archive_invalid') continue;
      if (schedule.kind) {
        // `esign retry-archive <transactionId>` (src/client): first before the fix (refused again), then after it.
        const answered = () => Promise.race([inFlight.at(-1), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
        if (!t.zip?.valid) {
          track(`late retry before the fix (${t.id})`, 'lateRetry', retryEsignArchive(client, t.id), { expected: 'refused' });
          await answered();
        }
        model.fixZips();
        track(`late retry (${t.id})`, 'lateRetry', retryEsignArchive(client, t.id), { expected: 'archived', transactionId: t.id });
        await answered();
        continue;
      }
      options.log?.(`operator repairs the late completion of ${t.id}`);
      model.fixZips();
      await late.startUpdate(lateRetryArchiveUpdate, { args: [], waitForStage: WorkflowUpdateStage.ACCEPTED }).catch(() => undefined);
    }
  }
}

/** Whether a schedule gives the server's hints (explore/server-hints.ts): only then are the worker's tasks read on their way. */
function givesHints(schedule: Schedule): boolean {
  const all = [schedule.steps, schedule.late, ...(schedule.next ?? []).flatMap((n) => [n.steps, n.late])].flat();
  return all.some(
    (s) =>
      s.kind === 'deploy' ||
      s.kind === 'suggestContinueAsNew' ||
      (s.kind === 'upkeep' && s.suggestContinueAsNew) ||
      (s.kind === 'hold' && s.suggest),
  );
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
