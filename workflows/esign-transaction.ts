/**
 * One signature transaction, from PDFs to its end at the provider:
 * upload -> create -> (draft -> send) -> wait for the provider's end (webhook
 * signals, reconciliation polls, the deadline, a cancel) -> confirm ->
 * archive when completed -> report. It never reports `cancelled` or `expired`
 * while the provider's transaction can still complete: it withdraws it first.
 * docs/workflow.md draws every way it ends.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  metricMeter,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ParticipantState, TransactionState, WithdrawOutcome } from '../activities/transactions.js';
import { isRefusedPlaintext, PLAINTEXT_REFUSED_MESSAGE } from '../src/codec/plaintext.js';
import { ESIGN_COMPLETED_EVENT, endStatusOf, isEndEvent, isProviderEndStatus, type EsignEndEvent } from '../src/esign/events.js';
import type { CreateTransactionRequest, EsignWebhook, Participant } from '../src/esign/schemas.js';
import { FailureType } from '../src/failures.js';
import { INPUT_DEFAULTS } from '../src/transaction/defaults.js';
import type { EsignTransactionInput, ValidEsignTransactionInput } from '../src/transaction/input.js';
import { durationToMs } from '../src/util/duration.js';
import { ARCHIVE, LOCAL_POLL, LOCAL_PROVIDER, localStep, POLL, PROVIDER, REPORT, step, UPLOAD } from './activity-options.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  esignEventSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
  type ArchiveResult,
  type EsignOutcome,
  type EsignPhase,
  type EsignTransactionResult,
  type IntegratorEvent,
  type ReplaceTransactionRequest,
} from './definitions.js';
import { inboxIdFor, inboxOwnerFinishedSignal } from './inbox-definitions.js';
import { readCompletedNotification, readNotification } from './notification.js';
import { Progress } from './progress.js';
import { buildCreateRequest, buildUpdateRequest, validInput } from './requests.js';
import { EsignId, EsignReferenceId, EsignSignedCount, EsignStatus, EsignTransactionId, EsignWaitingFor } from './search-attributes.js';

export { INPUT_VALIDATED_OUTSIDE_SANDBOX } from './requests.js';
/** Cancel and deadline withdraw the transaction at the provider before the workflow reports its end. */
export const WITHDRAW_BEFORE_END = 'withdraw-at-provider-before-end';
/** Polls back off (with jitter) and the workflow continues as new before its history grows large. */
export const BOUNDED_HISTORY = 'bounded-polling-and-continue-as-new';
/** Participant progress, reminders and signed events to the integrator's callback. */
export const PROGRESS_AND_EVENTS = 'participant-progress-reminders-and-events';
/** The deadline counts from the workflow's start, not from the clock after input validation. */
export const DEADLINE_FROM_START = 'deadline-counted-from-workflow-start';
/** Short, idempotent provider calls and the report run as local activities (a round trip fewer each). */
export const SHORT_STEPS_LOCAL = 'short-steps-as-local-activities';
/** Our own bound on one run's history, whatever the server suggests (docs/workflow.md, "Bounded history"). */
export const MAX_EVENTS_PER_RUN = 2_000;

/** What a run hands to the next when it continues as new: everything the transaction must not forget. */
export interface ContinuedTransaction {
  participants: Participant[];
  request: CreateTransactionRequest;
  /** Absent in runs continued before the evidence checks. */
  originals?: Record<string, string>;
  created: { transactionId: string; esignId: string };
  phase: EsignPhase;
  deadlineAt: number;
  providerStatus: string | null;
  lastReconciledAt: string | null;
  accepted: number;
  rejected: number;
  /** The latest notification ids, so a redelivery across the hand-over has one effect. */
  seen: string[];
  progress: ParticipantState[] | null;
  /** Participants whose signature the integrator was told of. */
  announced: string[];
  reminders: { sent: number; nextAt: number | null };
  pollMs: number;
  runs: number;
}

const FINISHED: readonly EsignPhase[] = ['completed', 'declined', 'expired', 'cancelled', 'deleted'];
const BACKOFF = 1.5;
const SEEN_KEPT = 200;

/** A cancel that is being carried out: every `cancel` update waiting on it gets its outcome. */
interface CancelAttempt {
  reason: string;
  refused?: { message: string; type: string };
}

export async function esignTransaction(rawInput: EsignTransactionInput, continued?: ContinuedTransaction): Promise<EsignTransactionResult> {
  // Set in step 0. Handlers are registered before it, so that an update sent
  // with the start (update-with-start) finds its handler.
  let input: ValidEsignTransactionInput | undefined;
  let participants: Participant[] = continued?.participants ?? [];
  let deadlineAt = continued?.deadlineAt ?? 0;

  // ----------------------------------------------------------------- state
  let phase: EsignPhase = continued?.phase ?? 'uploading';
  let request: CreateTransactionRequest | undefined = continued?.request;
  /** SHA-256 of each PDF we uploaded, by StoragePath: the archive checks the provider signed exactly these. */
  let originals: Record<string, string> = continued?.originals ?? {};
  let created: { transactionId: string; esignId: string } | undefined = continued?.created;
  let providerStatus: string | null = continued?.providerStatus ?? null;
  let progress: Progress | undefined = continued
    ? new Progress(continued.participants, continued.progress, continued.announced)
    : undefined;
  /** A participant event arrived: read the record to learn who did what. */
  let progressStale = false;
  let reminders = continued?.reminders ?? { sent: 0, nextAt: null as number | null };
  const outstanding: Promise<void>[] = [];
  /** The end a webhook (or poll) announced, still to be confirmed with the provider. */
  let notified: EsignEndEvent | undefined;
  let cancelAttempt: CancelAttempt | undefined;
  let lastReconciledAt: string | null = continued?.lastReconciledAt ?? null;
  let accepted = continued?.accepted ?? 0;
  let rejected = continued?.rejected ?? 0;
  let result: EsignTransactionResult | null = null;
  let activity = 0; // bumped by every message: a busy transaction polls at its shortest interval
  const seenNotifications = new Set<string>(continued?.seen ?? []);
  const earlyNotifications: EsignWebhook[] = [];
  /** Set in step 0; false when replaying histories from before the short steps ran locally. */
  let localSteps = false;
  // One local activity at a time: two outstanding at once (an update's signing URL while the main path
  // registers) may be resolved in another order on replay than they were run, which breaks determinism.
  let localTurn: Promise<unknown> = Promise.resolve();
  const oneAtATime = (acts: ReturnType<typeof localStep>): ReturnType<typeof localStep> =>
    new Proxy(acts, {
      get: (target, name: keyof typeof acts) => {
        const call = target[name] as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => {
          const result = localTurn.then(() => call(...args));
          localTurn = result.catch(() => undefined);
          return result;
        };
      },
    });
  const local = (options: Parameters<typeof localStep>[0], summary: string) => oneAtATime(localStep(options, summary));
  const provider = (summary: string) => (localSteps ? local(LOCAL_PROVIDER, summary) : step(PROVIDER, summary));
  const poll = (summary: string) => (localSteps ? local(LOCAL_POLL, summary) : step(POLL, summary));
  const report = (summary: string) => (localSteps ? local(REPORT, summary) : step(REPORT, summary));

  /** The Web UI's one line: where the transaction is, and who it waits for. */
  const currentDetails = () => {
    if (FINISHED.includes(phase)) return `Ended ${phase}${result?.reason ? `: ${result.reason}` : ''}`;
    const who = progress?.known ? progress.summary() : `${participants.length} participant(s) to sign`;
    if (phase === 'awaiting_signatures') return who;
    if (phase === 'overdue') return `Overdue: ${who}`;
    return phase.replace('_', ' ');
  };
  const setPhase = (next: EsignPhase) => {
    phase = next;
    upsertSearchAttributes([{ key: EsignStatus, value: next }]);
    setCurrentDetails(currentDetails());
  };
  const nameOf = (id: string) => {
    const p = participants.find((x) => x.id === id);
    return p ? `${p.firstName} ${p.lastName}` : id;
  };
  // -------------------------------------------------------------- messages
  setHandler(statusQuery, () => ({
    phase,
    summary: currentDetails(),
    referenceId: input?.referenceId ?? (typeof rawInput?.referenceId === 'string' ? rawInput.referenceId : ''),
    transactionId: created?.transactionId ?? null,
    esignId: created?.esignId ?? null,
    participants: participants.map((p) => {
      const state = progress?.states?.find((s) => s.id === p.id);
      return {
        id: p.id,
        name: `${p.firstName} ${p.lastName}`,
        ...(state ? { status: state.status, ...(state.at ? { at: state.at } : {}) } : {}),
      };
    }),
    providerStatus,
    deadline: deadlineAt ? new Date(deadlineAt).toISOString() : null,
    lastReconciledAt,
    notificationsAccepted: accepted,
    notificationsRejected: rejected,
    result,
  }));

  const acceptNotification = (n: EsignWebhook) => {
    if (created && n.data.entity_id === created.esignId && n.data.transaction_id === created.transactionId) {
      accepted++;
      activity++;
      if (!isEndEvent(n.event)) {
        progressStale = true;
        return;
      }
      // A completion outranks any other end: the ZIP must be archived.
      if (notified !== ESIGN_COMPLETED_EVENT) notified = n.event;
    } else {
      rejected++;
      log.warn('notification for another transaction ignored', { notificationId: n.data.notificationId });
    }
  };
  const receive = (notification: EsignWebhook | string) => {
    if (typeof notification === 'string') {
      rejected++;
      log.warn('invalid notification signal ignored', { issue: notification });
      return;
    }
    const id = notification.data.notificationId;
    if (seenNotifications.has(id)) return; // redelivery: one effect per notification
    seenNotifications.add(id);
    // Before creation returns we cannot match the ids yet: keep the notification.
    if (!created) earlyNotifications.push(notification);
    else acceptNotification(notification);
  };
  setHandler(esignCompletedSignal, (payload) => receive(readCompletedNotification(payload)));
  setHandler(esignEventSignal, (payload) => receive(readNotification(payload)));

  const isFinishing = () => FINISHED.includes(phase) || phase === 'archiving' || cancelAttempt !== undefined;
  const unknownParticipants = (ids: string[]) => ids.filter((id) => !participants.some((p) => p.id === id));

  setHandler(
    issueSigningUrlUpdate,
    async ({ participantIds, style }) => {
      activity++;
      await condition(() => created !== undefined || isFinishing());
      if (!created || isFinishing()) throw ApplicationFailure.nonRetryable(`transaction is ${phase}`, FailureType.TransactionFinished);
      if (phase === 'draft') throw ApplicationFailure.nonRetryable('transaction is a draft: send it first', FailureType.TransactionIsDraft);
      // Checked here too: an update that came with the start was validated before the participants were known.
      const unknown = unknownParticipants(participantIds);
      if (unknown.length > 0)
        throw ApplicationFailure.nonRetryable(`unknown participant(s): ${unknown.join(', ')}`, FailureType.UnknownParticipant);
      const iframeStyle = style ?? input!.iframeStyle;
      const { url } = await provider(`Issue a signing URL for ${participantIds.length} participant(s)`).createSigningUrl({
        esignId: created.esignId,
        participantIds,
        ...(iframeStyle ? { style: iframeStyle } : {}),
      });
      // With the provider's id, a caller that started with this update needs no query to learn it.
      return { url, transactionId: created.transactionId };
    },
    {
      validator: (request) => {
        if (isRefusedPlaintext(request)) throw new Error(PLAINTEXT_REFUSED_MESSAGE);
        const { participantIds } = request as { participantIds: unknown };
        if (isFinishing()) throw new Error(`transaction is ${cancelAttempt ? 'being cancelled' : phase}`);
        if (!Array.isArray(participantIds) || participantIds.length === 0) throw new Error('participantIds must not be empty');
        const unknown = input ? unknownParticipants(participantIds as string[]) : [];
        if (unknown.length > 0) throw new Error(`unknown participant(s): ${unknown.join(', ')}`);
      },
    },
  );

  setHandler(
    replaceTransactionUpdate,
    async (change: ReplaceTransactionRequest) => {
      activity++;
      await condition(() => request !== undefined && created !== undefined);
      const next = buildUpdateRequest(request!, input!.referenceId, change);
      const ref = await step(PROVIDER, `Replace the transaction (status ${change.status})`).updateTransaction({
        transactionId: created!.transactionId,
        request: next,
      });
      request = { ...request!, ...next };
      providerStatus = ref.status;
      if (!isFinishing()) setPhase(change.status === 'draft' ? 'draft' : 'awaiting_signatures');
      return { status: ref.status };
    },
    {
      validator: (change: ReplaceTransactionRequest) => {
        if (isRefusedPlaintext(change)) throw new Error(PLAINTEXT_REFUSED_MESSAGE);
        if (isFinishing()) throw new Error(`transaction is ${phase}; it can no longer be replaced`);
        if (phase === 'overdue') throw new Error('transaction is overdue: its deadline passed');
        if (change?.status !== 'draft' && change?.status !== 'esign_pending') throw new Error('status must be draft or esign_pending');
        if (change.emailSubject !== undefined && change.emailSubject.length > 255)
          throw new Error('emailSubject must be at most 255 characters');
      },
    },
  );

  setHandler(
    cancelUpdate,
    async ({ reason }) => {
      activity++;
      const attempt = (cancelAttempt ??= { reason: reason?.slice(0, 500) || 'cancelled on request' });
      await condition(() => result !== null || attempt.refused !== undefined);
      if (result) return result;
      throw ApplicationFailure.nonRetryable(attempt.refused!.message, attempt.refused!.type);
    },
    {
      validator: (request) => {
        if (isRefusedPlaintext(request)) throw new Error(PLAINTEXT_REFUSED_MESSAGE);
        if (FINISHED.includes(phase) || phase === 'archiving') throw new Error(`transaction is ${phase}; it can no longer be cancelled`);
      },
    },
  );

  const finish = async (outcome: EsignTransactionResult): Promise<EsignTransactionResult> => {
    result = outcome;
    setPhase(outcome.status);
    metricMeter
      .createCounter('esign_transactions_finished', 'transactions', 'Transactions finished, by outcome')
      .add(1, { status: outcome.status });
    if (created) {
      // Late redeliveries are then acknowledged by the inbox as stale; a late completion is archived by it.
      await getExternalWorkflowHandle(inboxIdFor(created.transactionId))
        .signal(inboxOwnerFinishedSignal, {
          outcome: outcome.status,
          ...(input!.archivePrefix ? { archivePrefix: input!.archivePrefix } : {}),
          ...(input!.callbackUrl ? { callbackUrl: input!.callbackUrl } : {}),
        })
        .catch((err: unknown) => log.warn('could not tell the inbox this transaction finished', { error: (err as Error).message }));
    }
    await Promise.all(outstanding.splice(0)); // progress events reach the integrator before the outcome
    try {
      await report(`Report: ${outcome.status}`).recordCompletion({
        result: outcome,
        ...(input!.callbackUrl ? { callbackUrl: input!.callbackUrl } : {}),
      });
    } catch (err) {
      // The transaction's outcome stands; a callback that cannot be reached is reported, not fatal.
      log.error('completion could not be reported to the callback', { error: (err as Error).message });
    }
    await condition(allHandlersFinished);
    return outcome;
  };
  const ended = (status: EsignOutcome, reason: string, endedBy: NonNullable<EsignTransactionResult['endedBy']>, extra = {}) =>
    finish({
      status,
      reason,
      referenceId: input!.referenceId,
      transactionId: created?.transactionId ?? null,
      esignId: created?.esignId ?? null,
      ...(withdrawFirst ? { endedBy } : {}),
      ...extra,
    });

  // ---------------------------------------------- 0. validate the input
  // Asked before the local activity: a marker recorded right after one lands ahead of its result in history.
  const deadlineFromStart = !continued && patched(DEADLINE_FROM_START);
  localSteps = patched(SHORT_STEPS_LOCAL);
  const valid = continued ? (rawInput as ValidEsignTransactionInput) : await validInput(rawInput);
  input = valid;
  const reconcileMs = durationToMs(valid.reconcileInterval);
  const maxPollMs = Math.max(reconcileMs, durationToMs(valid.reconcileMaxInterval ?? INPUT_DEFAULTS.reconcileMaxInterval));
  // Set once the transaction exists (markers of new behaviour; false when replaying older histories).
  let withdrawFirst = false;
  let bounded = false;
  let eventsOn = false;

  if (!continued) {
    // Counted from the recorded start: the clock right after the local activity above may differ between
    // the first execution and a replay, which let a replay take the deadline branch a moment too early.
    deadlineAt = (deadlineFromStart ? workflowInfo().startTime.getTime() : Date.now()) + durationToMs(valid.signingDeadline);
    // Participant ids are generated here when the caller gave none: uuid4() is deterministic on replay.
    participants = valid.participants.map((p) => ({ ...p, id: p.id ?? uuid4() }));
    progress = new Progress(participants);
    upsertSearchAttributes([
      { key: EsignReferenceId, value: valid.referenceId },
      { key: EsignStatus, value: phase },
    ]);
    metricMeter.createCounter('esign_transactions_started', 'transactions', 'Transactions started').add(1);

    // ------------------------------------------------------- 1. upload PDFs
    const uploaded = await step(UPLOAD, `Upload ${valid.documents.length} document(s)`).uploadDocuments({
      documents: valid.documents.map((d) => ({ title: d.title, source: d.source })),
    });
    const { storagePaths } = uploaded;
    // Absent from workers older than the evidence checks (and from replayed histories of them).
    originals = uploaded.sha256 ?? {};
    // Nothing exists at the provider yet: a cancel needs no withdraw.
    if (cancelAttempt) return ended('cancelled', cancelAttempt.reason, 'request');

    // ------------------------------------------- 2. create the transaction
    setPhase('creating');
    request = buildCreateRequest(valid, participants, storagePaths);
    const ref = await step(PROVIDER, `Create the transaction (${valid.status})`).createTransaction(request);
    created = { transactionId: ref.transactionId, esignId: ref.esignId };
    providerStatus = ref.status;
    upsertSearchAttributes([
      { key: EsignTransactionId, value: ref.transactionId },
      { key: EsignId, value: ref.esignId },
    ]);
    const askPatches = () => {
      withdrawFirst = patched(WITHDRAW_BEFORE_END);
      bounded = patched(BOUNDED_HISTORY);
      eventsOn = patched(PROGRESS_AND_EVENTS);
    };
    // A patch asked right after a local activity lands ahead of its result in history and breaks replay:
    // with a local registration they are asked before it; histories from before keep them after it.
    if (localSteps) askPatches();
    // Webhooks name provider ids: tell the transaction's inbox (docs/webhooks.md) that this workflow owns them.
    await provider('Register for provider webhooks').registerWithInbox({
      transactionId: ref.transactionId,
      ownerWorkflowId: workflowInfo().workflowId,
    });
    setPhase(valid.status === 'draft' ? 'draft' : 'awaiting_signatures');
    if (!localSteps) askPatches();
    if (eventsOn && valid.reminders && valid.callbackUrl) reminders.nextAt = Date.now() + durationToMs(valid.reminders.firstAfter);
    for (const n of earlyNotifications.splice(0)) acceptNotification(n);
  } else {
    withdrawFirst = patched(WITHDRAW_BEFORE_END);
    bounded = patched(BOUNDED_HISTORY);
    eventsOn = patched(PROGRESS_AND_EVENTS);
    setCurrentDetails(currentDetails());
    upsertSearchAttributes([
      { key: EsignReferenceId, value: valid.referenceId },
      { key: EsignTransactionId, value: created!.transactionId },
      { key: EsignId, value: created!.esignId },
      { key: EsignStatus, value: phase },
    ]);
    // The inbox signals the workflow id, not a run: it reaches this run without registering again.
  }
  const providerTx = created!;

  // ----------------------------------------- progress and the integrator
  /** Sends an event to the integrator's callback without holding up the transaction; retried by Temporal. */
  const notify = (event: Omit<IntegratorEvent, 'occurredAt'> & { occurredAt?: string }) => {
    if (!eventsOn || !valid.callbackUrl) return;
    const full: IntegratorEvent = { ...event, occurredAt: event.occurredAt ?? new Date().toISOString() };
    outstanding.push(
      step(REPORT, `Tell the integrator: ${event.type}`)
        .notifyIntegrator({ callbackUrl: valid.callbackUrl, event: full })
        .catch((err: unknown) =>
          log.error('an event could not be delivered to the callback', { type: event.type, error: (err as Error).message }),
        ),
    );
  };
  const refs = () => ({ referenceId: valid.referenceId, transactionId: providerTx.transactionId });
  /** Takes the provider's report of who did what; announces new signatures and updates what operators see. */
  const applyProgress = (states: ParticipantState[] | undefined) => {
    if (!progress?.apply(states)) return;
    if (eventsOn) {
      for (const s of progress.takeNewlySigned()) {
        notify({
          type: 'participant.signed',
          key: `${providerTx.transactionId}:participant.signed:${s.id}`,
          ...(s.at ? { occurredAt: s.at } : {}),
          data: {
            ...refs(),
            participant: { id: s.id, name: nameOf(s.id) },
            signedAt: s.at ?? null,
            signed: progress.signedCount,
            of: participants.length,
          },
        });
      }
      upsertSearchAttributes([
        { key: EsignSignedCount, value: progress.signedCount },
        { key: EsignWaitingFor, value: progress.waiting.map((p) => p.id) },
      ]);
    }
    setCurrentDetails(currentDetails());
  };

  /** Reminds each participant still to sign, with a fresh signing URL, through the integrator (embedded signing). */
  const sendReminders = async (plan: NonNullable<ValidEsignTransactionInput['reminders']>): Promise<EsignTransactionResult | undefined> => {
    const fresh = await provider('Check who still has to sign').getTransactionStatus(providerTx.transactionId);
    providerStatus = fresh.status;
    applyProgress(fresh.participants);
    if (fresh.status === 'completed') {
      notified = ESIGN_COMPLETED_EVENT;
      return undefined;
    }
    if (isProviderEndStatus(fresh.status)) return settle(fresh);
    const n = reminders.sent + 1;
    for (const p of progress!.waiting) {
      const style = valid.iframeStyle;
      const { url } = await provider(`Issue a signing URL for reminder ${n}`).createSigningUrl({
        esignId: providerTx.esignId,
        participantIds: [p.id],
        ...(style ? { style } : {}),
      });
      notify({
        type: 'reminder.due',
        key: `${providerTx.transactionId}:reminder.due:${n}:${p.id}`,
        data: {
          ...refs(),
          participant: { id: p.id, name: nameOf(p.id) },
          signingUrl: url,
          reminder: n,
          of: plan.maxCount,
          deadline: new Date(deadlineAt).toISOString(),
        },
      });
    }
    const next = reminders.nextAt! + durationToMs(plan.every);
    reminders = { sent: n, nextAt: n >= plan.maxCount || next >= deadlineAt ? null : next };
    return undefined;
  };

  // ------------------------------------------ ends, each confirmed first
  /** Ends as the provider's state says, when it has ended; archives a completion first. */
  const settle = async (state: Pick<TransactionState, 'status' | 'participants'>): Promise<EsignTransactionResult | undefined> => {
    applyProgress(state.participants);
    switch (state.status) {
      case 'completed': {
        setPhase('archiving');
        const archive: ArchiveResult = await step(ARCHIVE, 'Download, verify and archive the signed ZIP').archiveCompletedDocuments({
          referenceId: valid.referenceId,
          transactionId: providerTx.transactionId,
          esignId: providerTx.esignId,
          documents: request!.documents.map((d) => {
            const sha256 = originals[d.StoragePath];
            return { title: d.title, StoragePath: d.StoragePath, ...(sha256 ? { sha256 } : {}) };
          }),
          ...(valid.archivePrefix ? { archivePrefix: valid.archivePrefix } : {}),
        });
        return finish({
          status: 'completed',
          referenceId: valid.referenceId,
          transactionId: providerTx.transactionId,
          esignId: providerTx.esignId,
          archive,
        });
      }
      case 'declined': {
        const decliner = state.participants?.find((p) => p.status === 'declined');
        return ended('declined', decliner?.reason ?? 'a participant declined to sign', 'signer', {
          ...(decliner ? { declinedBy: { participantId: decliner.id, name: nameOf(decliner.id) } } : {}),
        });
      }
      case 'cancelled':
        return ended('cancelled', 'the provider reports the transaction cancelled', 'provider');
      case 'expired':
        return ended('expired', 'the provider reports the transaction expired', 'provider');
      case 'deleted':
        // Histories before withdraw-before-end reported a provider deletion as expired.
        return ended(withdrawFirst ? 'deleted' : 'expired', 'the provider reports the transaction deleted', 'provider');
      default:
        return undefined;
    }
  };

  /** Takes the transaction back from its signers; what the provider holds if it refuses. */
  const withdraw = (why: string): Promise<WithdrawOutcome> =>
    step(PROVIDER, `Withdraw the transaction from its signers (${why})`).withdrawTransaction({
      transactionId: providerTx.transactionId,
      request: buildUpdateRequest(request!, valid.referenceId, { status: 'draft' }),
    });

  /** A refused withdraw: someone has signed, so the transaction can still complete. */
  const signedCount = (w: WithdrawOutcome) =>
    !w.withdrawn && w.participants ? `${w.participants.filter((p) => p.status === 'signed').length} of ${participants.length}` : 'some';

  const endOnRequest = async (attempt: CancelAttempt): Promise<EsignTransactionResult | undefined> => {
    if (!withdrawFirst) return ended('cancelled', attempt.reason, 'request');
    const w = await withdraw('cancel');
    providerStatus = w.status;
    if (w.withdrawn) return ended('cancelled', attempt.reason, 'request');
    cancelAttempt = undefined;
    applyProgress(w.participants);
    if (w.status === 'completed') {
      attempt.refused = {
        type: FailureType.TransactionFinished,
        message: 'the transaction has completed at the provider; it is being archived',
      };
      notified = ESIGN_COMPLETED_EVENT;
      return undefined;
    }
    if (isProviderEndStatus(w.status)) return settle(w); // the cancel returns that end
    attempt.refused = {
      type: FailureType.WithdrawRefused,
      message: `the provider refused to withdraw the transaction: ${signedCount(w)} participant(s) have signed, so it can still complete; the workflow keeps following it`,
    };
    log.warn('cancel refused: the provider keeps the transaction open', { providerStatus: w.status });
    return undefined;
  };

  const endAtDeadline = async (): Promise<EsignTransactionResult | undefined> => {
    if (!withdrawFirst) return ended('expired', 'signing deadline passed', 'deadline');
    const w = await withdraw('deadline');
    providerStatus = w.status;
    if (w.withdrawn) return ended('expired', 'signing deadline passed', 'deadline');
    applyProgress(w.participants);
    if (w.status === 'completed') {
      notified = ESIGN_COMPLETED_EVENT;
      return undefined;
    }
    if (isProviderEndStatus(w.status)) return settle(w);
    setPhase('overdue');
    log.warn('deadline passed but the provider refused to withdraw: following the transaction to its end', { signed: signedCount(w) });
    return undefined;
  };

  // ------------------------------------- 3. follow the transaction to its end
  let pollMs = continued?.pollMs ?? reconcileMs;
  let quietSince = activity;
  for (;;) {
    if (cancelAttempt && !cancelAttempt.refused) {
      const end = await endOnRequest(cancelAttempt);
      if (end) return end;
    }
    if (phase !== 'overdue' && Date.now() >= deadlineAt) {
      const end = await endAtDeadline();
      if (end) return end;
    }

    if (notified) {
      // --------------------------------- 4. confirm with the provider
      const announced = notified;
      const confirmed = await provider(`Confirm with the provider (${announced})`).getTransactionStatus(providerTx.transactionId);
      providerStatus = confirmed.status;
      notified = undefined;
      const end = await settle(confirmed);
      if (end) return end;
      log.warn('notified of an end the provider does not confirm; waiting on', { announced: endStatusOf(announced), providerStatus });
      continue;
    }

    if (progressStale && eventsOn) {
      // A participant event: the record says who did what (webhooks only hint, and may come out of order).
      progressStale = false;
      const state = await provider("Read the participants' progress").getTransactionStatus(providerTx.transactionId);
      providerStatus = state.status;
      if (state.status === 'completed') notified = ESIGN_COMPLETED_EVENT;
      else if (isProviderEndStatus(state.status)) {
        const end = await settle(state);
        if (end) return end;
      }
      applyProgress(state.participants);
      continue;
    }

    if (valid.reminders && reminders.nextAt !== null && phase === 'awaiting_signatures' && Date.now() >= reminders.nextAt) {
      const end = await sendReminders(valid.reminders);
      if (end) return end;
      continue;
    }

    if (bounded && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= MAX_EVENTS_PER_RUN)) {
      // Handlers and events in flight finish first; a message that arrives meanwhile is handled before the hand-over.
      await Promise.all(outstanding.splice(0));
      await condition(allHandlersFinished);
      if (!notified && !cancelAttempt && !progressStale) {
        const carried: ContinuedTransaction = {
          participants,
          request: request!,
          originals,
          created: providerTx,
          phase,
          deadlineAt,
          providerStatus,
          lastReconciledAt,
          accepted,
          rejected,
          seen: [...seenNotifications].slice(-SEEN_KEPT),
          progress: progress?.states ?? null,
          announced: [...(progress?.announced ?? [])],
          reminders,
          pollMs,
          runs: (continued?.runs ?? 1) + 1,
        };
        return continueAsNew<typeof esignTransaction>(valid, carried);
      }
      continue;
    }

    // ------------------------------------------------- wait for news
    const waitingIn = phase;
    const remaining = deadlineAt - Date.now();
    if (bounded && activity !== quietSince) {
      pollMs = reconcileMs;
      quietSince = activity;
    }
    const interval = bounded ? Math.round(pollMs * (0.9 + 0.2 * Math.random())) : reconcileMs;
    // A draft waits for replaceTransaction to send it (a phase change), not for polls; an overdue one has no deadline.
    const untilReminder =
      reminders.nextAt !== null && waitingIn === 'awaiting_signatures' ? Math.max(0, reminders.nextAt - Date.now()) : Infinity;
    const wait = waitingIn === 'draft' ? remaining : waitingIn === 'overdue' ? interval : Math.min(interval, remaining, untilReminder);
    const until = new Date(Date.now() + wait).toISOString().slice(0, 16).replace('T', ' ');
    const summary =
      waitingIn === 'draft'
        ? `Wait for the draft to be sent until ${until} UTC`
        : waitingIn === 'overdue'
          ? `Overdue: wait for the provider's end (next check ${until} UTC)`
          : `Wait for signatures until ${until} UTC`;
    const woke = await condition(
      () => notified !== undefined || cancelAttempt !== undefined || phase !== waitingIn || progressStale,
      wait,
      { summary },
    );
    if (woke || waitingIn === 'draft' || (waitingIn !== 'overdue' && Date.now() >= deadlineAt)) continue;
    if (reminders.nextAt !== null && waitingIn === 'awaiting_signatures' && Date.now() >= reminders.nextAt) continue;

    // ------------------------------- reconciliation: a webhook may be lost
    try {
      const polled = await poll('Check the provider (a webhook may be lost)').getTransactionStatus(providerTx.transactionId);
      providerStatus = polled.status;
      lastReconciledAt = new Date().toISOString();
      applyProgress(polled.participants);
      if (polled.status === 'completed') notified = ESIGN_COMPLETED_EVENT;
      else if (isProviderEndStatus(polled.status)) {
        const end = await settle(polled);
        if (end) return end;
      } else if (bounded) pollMs = Math.min(maxPollMs, pollMs * BACKOFF);
    } catch (err) {
      log.warn('reconciliation poll failed; will poll again', { error: (err as Error).message });
    }
  }
}
