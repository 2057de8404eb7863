/**
 * One signature transaction, from PDFs to an archived, verified ZIP:
 * upload -> create -> (draft -> send) -> wait for signatures (webhook signal,
 * with reconciliation polls and a deadline) -> confirm -> archive -> report.
 */
import {
  ActivityFailure,
  type ActivityOptions,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  log,
  metricMeter,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import { FailureType } from '../src/failures.js';
import { INPUT_DEFAULTS } from '../src/transaction/defaults.js';
import { durationToMs } from '../src/util/duration.js';
import type { CreateTransactionRequest, EsignCompletedWebhook, Participant, UpdateTransactionRequest } from '../src/esign/schemas.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
  type ArchiveResult,
  type EsignPhase,
  type EsignTransactionResult,
  type ReplaceTransactionRequest,
} from './definitions.js';
import { inboxIdFor, inboxOwnerFinishedSignal } from './inbox-definitions.js';
import type { EsignTransactionInput, ValidEsignTransactionInput } from '../src/transaction/input.js';
import { readCompletedNotification } from './notification.js';
import { EsignId, EsignReferenceId, EsignStatus, EsignTransactionId } from './search-attributes.js';

const retry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '2 minutes' } as const;

// Activities heartbeat every 2 s while they run (src/worker/heartbeat.ts), so a dead worker is noticed
// within the heartbeat timeout, however long the start-to-close allows a slow upload or download.
const UPLOAD = { startToCloseTimeout: '10 minutes', heartbeatTimeout: '20 seconds', retry } as const;
const PROVIDER = { startToCloseTimeout: '2 minutes', heartbeatTimeout: '10 seconds', retry } as const;
/** Reconciliation polls give up quickly: the next poll comes anyway. */
const POLL = { ...PROVIDER, startToCloseTimeout: '30 seconds', retry: { ...retry, maximumAttempts: 3 } } as const;
const ARCHIVE = { startToCloseTimeout: '30 minutes', heartbeatTimeout: '20 seconds', retry } as const;
const REPORT = { startToCloseTimeout: '30 seconds', retry: { ...retry, maximumInterval: '5 minutes', maximumAttempts: 20 } } as const;

/** Activities whose calls carry a summary, so the Web UI's timeline reads as the business process. */
const step = (options: ActivityOptions, summary: string) => proxyActivities<EsignActivities>({ ...options, summary });

const FINISHED: readonly EsignPhase[] = ['completed', 'expired', 'cancelled'];

/** Input validation moved from the workflow sandbox to a local activity (workflows/README.md says why). */
export const INPUT_VALIDATED_OUTSIDE_SANDBOX = 'input-validated-in-local-activity';
const checks = proxyLocalActivities<EsignActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

export async function esignTransaction(rawInput: EsignTransactionInput): Promise<EsignTransactionResult> {
  // Set in step 0. Handlers are registered before it, so that an update sent
  // with the start (update-with-start) finds its handler.
  let input: ValidEsignTransactionInput | undefined;
  let participants: Participant[] = [];
  let deadlineAt = 0;

  // ----------------------------------------------------------------- state
  let phase = 'uploading' as EsignPhase;
  let request: CreateTransactionRequest | undefined;
  let created: { transactionId: string; esignId: string } | undefined;
  let providerStatus: string | null = null;
  let completionNotified = false;
  let cancelReason: string | undefined;
  let lastReconciledAt: string | null = null;
  let accepted = 0;
  let rejected = 0;
  let result: EsignTransactionResult | null = null;
  const seenNotifications = new Set<string>();
  const earlyNotifications: EsignCompletedWebhook[] = [];

  const setPhase = (next: EsignPhase) => {
    phase = next;
    upsertSearchAttributes([{ key: EsignStatus, value: next }]);
  };
  // -------------------------------------------------------------- messages
  setHandler(statusQuery, () => ({
    phase,
    referenceId: input?.referenceId ?? (typeof rawInput?.referenceId === 'string' ? rawInput.referenceId : ''),
    transactionId: created?.transactionId ?? null,
    esignId: created?.esignId ?? null,
    participants: participants.map((p) => ({ id: p.id, name: `${p.firstName} ${p.lastName}` })),
    providerStatus,
    deadline: deadlineAt ? new Date(deadlineAt).toISOString() : null,
    lastReconciledAt,
    notificationsAccepted: accepted,
    notificationsRejected: rejected,
    result,
  }));

  const acceptNotification = (n: EsignCompletedWebhook) => {
    if (created && n.data.entity_id === created.esignId && n.data.transaction_id === created.transactionId) {
      accepted++;
      completionNotified = true;
    } else {
      rejected++;
      log.warn('esignCompleted signal for another transaction ignored', { notificationId: n.data.notificationId });
    }
  };

  setHandler(esignCompletedSignal, (payload) => {
    const notification = readCompletedNotification(payload);
    if (typeof notification === 'string') {
      rejected++;
      log.warn('invalid esignCompleted signal ignored', { issue: notification });
      return;
    }
    const id = notification.data.notificationId;
    if (seenNotifications.has(id)) return; // redelivery: one effect per notification
    seenNotifications.add(id);
    // Before creation returns we cannot match the ids yet: keep the notification.
    if (!created) earlyNotifications.push(notification);
    else acceptNotification(notification);
  });

  const isFinishing = () => FINISHED.includes(phase) || phase === 'archiving' || cancelReason !== undefined;

  const unknownParticipants = (ids: string[]) => ids.filter((id) => !participants.some((p) => p.id === id));

  setHandler(
    issueSigningUrlUpdate,
    async ({ participantIds, style }) => {
      await condition(() => created !== undefined || isFinishing());
      if (!created || isFinishing()) throw ApplicationFailure.nonRetryable(`transaction is ${phase}`, FailureType.TransactionFinished);
      if (phase === 'draft') throw ApplicationFailure.nonRetryable('transaction is a draft: send it first', FailureType.TransactionIsDraft);
      // Checked here too: an update that came with the start was validated before the participants were known.
      const unknown = unknownParticipants(participantIds);
      if (unknown.length > 0)
        throw ApplicationFailure.nonRetryable(`unknown participant(s): ${unknown.join(', ')}`, FailureType.UnknownParticipant);
      const iframeStyle = style ?? input!.iframeStyle;
      return step(PROVIDER, `Issue a signing URL for ${participantIds.length} participant(s)`).createSigningUrl({
        esignId: created.esignId,
        participantIds,
        ...(iframeStyle ? { style: iframeStyle } : {}),
      });
    },
    {
      validator: ({ participantIds }) => {
        if (isFinishing()) throw new Error(`transaction is ${cancelReason ? 'being cancelled' : phase}`);
        if (!Array.isArray(participantIds) || participantIds.length === 0) throw new Error('participantIds must not be empty');
        const unknown = input ? unknownParticipants(participantIds as string[]) : [];
        if (unknown.length > 0) throw new Error(`unknown participant(s): ${unknown.join(', ')}`);
      },
    },
  );

  setHandler(
    replaceTransactionUpdate,
    async (change: ReplaceTransactionRequest) => {
      await condition(() => request !== undefined && created !== undefined);
      const next: UpdateTransactionRequest = {
        documents: request!.documents,
        participants: request!.participants,
        referenceId: input!.referenceId,
        status: change.status,
        ...pick(request!, ['notifyParticipants', 'signingOrder', 'personalizedMessage', 'emailSubject']),
        ...pick(change, ['notifyParticipants', 'signingOrder', 'personalizedMessage', 'emailSubject']),
      };
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
        if (isFinishing()) throw new Error(`transaction is ${phase}; it can no longer be replaced`);
        if (change?.status !== 'draft' && change?.status !== 'esign_pending') throw new Error('status must be draft or esign_pending');
        if (change.emailSubject !== undefined && change.emailSubject.length > 255)
          throw new Error('emailSubject must be at most 255 characters');
      },
    },
  );

  setHandler(
    cancelUpdate,
    async ({ reason }) => {
      cancelReason ??= reason?.slice(0, 500) || 'cancelled on request';
      await condition(() => result !== null);
      return result!;
    },
    {
      validator: (_request) => {
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
      // Late redeliveries are then acknowledged by the inbox as stale instead of forwarded.
      await getExternalWorkflowHandle(inboxIdFor(created.transactionId))
        .signal(inboxOwnerFinishedSignal)
        .catch((err: unknown) => log.warn('could not tell the inbox this transaction finished', { error: (err as Error).message }));
    }
    try {
      await step(REPORT, `Report: ${outcome.status}`).recordCompletion({
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
  const ended = (status: 'expired' | 'cancelled', reason: string) =>
    finish({
      status,
      reason,
      referenceId: input!.referenceId,
      transactionId: created?.transactionId ?? null,
      esignId: created?.esignId ?? null,
    });

  // ---------------------------------------------- 0. validate the input
  const valid = await validInput(rawInput);
  input = valid;
  deadlineAt = Date.now() + durationToMs(valid.signingDeadline);
  const reconcileMs = durationToMs(valid.reconcileInterval);
  // Participant ids are generated here when the caller gave none: uuid4() is deterministic on replay.
  participants = valid.participants.map((p) => ({ ...p, id: p.id ?? uuid4() }));
  upsertSearchAttributes([
    { key: EsignReferenceId, value: valid.referenceId },
    { key: EsignStatus, value: phase },
  ]);
  metricMeter.createCounter('esign_transactions_started', 'transactions', 'Transactions started').add(1);

  // ------------------------------------------------------- 1. upload PDFs
  const { storagePaths } = await step(UPLOAD, `Upload ${valid.documents.length} document(s)`).uploadDocuments({
    documents: valid.documents.map((d) => ({ title: d.title, source: d.source })),
  });
  if (cancelReason) return ended('cancelled', cancelReason);

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
  // Webhooks name provider ids: tell the transaction's inbox (docs/webhooks.md) that this workflow owns them.
  await step(PROVIDER, 'Register for completion webhooks').registerWithInbox({
    transactionId: ref.transactionId,
    ownerWorkflowId: workflowInfo().workflowId,
  });
  setPhase(valid.status === 'draft' ? 'draft' : 'awaiting_signatures');
  for (const n of earlyNotifications.splice(0)) acceptNotification(n);

  // ------------------------------------- 3. wait for all signatures
  for (;;) {
    if (cancelReason) return ended('cancelled', cancelReason);
    const remaining = deadlineAt - Date.now();
    if (remaining <= 0) return ended('expired', 'signing deadline passed');

    if (!completionNotified) {
      const waitingIn = phase;
      const wait = waitingIn === 'draft' ? remaining : Math.min(reconcileMs, remaining);
      // A draft waits for replaceTransaction to send it (a phase change), not for polls.
      const until = new Date(Date.now() + wait).toISOString().slice(0, 16).replace('T', ' ');
      const woke = await condition(() => completionNotified || cancelReason !== undefined || phase !== waitingIn, wait, {
        summary: waitingIn === 'draft' ? `Wait for the draft to be sent until ${until} UTC` : `Wait for signatures until ${until} UTC`,
      });
      if (woke || waitingIn === 'draft' || Date.now() >= deadlineAt) continue;
      // ------------------------------- reconciliation: a webhook may be lost
      try {
        const polled = await step(POLL, 'Check the provider (a webhook may be lost)').getTransactionStatus(created.transactionId);
        providerStatus = polled.status;
        lastReconciledAt = new Date().toISOString();
        if (polled.status === 'completed') completionNotified = true;
        else if (polled.status === 'cancelled') return ended('cancelled', 'the provider reports the transaction cancelled');
        else if (polled.status === 'expired' || polled.status === 'deleted')
          return ended('expired', `the provider reports the transaction ${polled.status}`);
      } catch (err) {
        log.warn('reconciliation poll failed; will poll again', { error: (err as Error).message });
      }
      continue;
    }

    // -------------------------------------------- 4. confirm completion
    const confirmed = await step(PROVIDER, 'Confirm completion with the provider').getTransactionStatus(created.transactionId);
    providerStatus = confirmed.status;
    if (confirmed.status === 'completed') break;
    log.warn('completion notified but the provider says otherwise; waiting on', { providerStatus: confirmed.status });
    completionNotified = false;
  }

  // ---------------------------------------------- 5. download and archive
  setPhase('archiving');
  const archive: ArchiveResult = await step(ARCHIVE, 'Download, verify and archive the signed ZIP').archiveCompletedDocuments({
    referenceId: valid.referenceId,
    transactionId: created.transactionId,
    esignId: created.esignId,
    documents: request.documents.map((d) => ({ title: d.title, StoragePath: d.StoragePath })),
    ...(valid.archivePrefix ? { archivePrefix: valid.archivePrefix } : {}),
  });

  // ------------------------------------------------------- 6. report
  return finish({
    status: 'completed',
    referenceId: valid.referenceId,
    transactionId: created.transactionId,
    esignId: created.esignId,
    archive,
  });
}

function buildCreateRequest(
  input: ValidEsignTransactionInput,
  participants: Participant[],
  storagePaths: string[],
): CreateTransactionRequest {
  return {
    status: input.status,
    referenceId: input.referenceId,
    documents: input.documents.map((d, i) => ({
      id: uuid4(),
      title: d.title,
      StoragePath: storagePaths[i]!,
      sessionType: 'esign',
      ...pick(d, ['description', 'order', 'readOnly', 'visible']),
      tags: d.tags.map(({ signerIndex, signerId, ...tag }) => ({ ...tag, signerId: signerId ?? participants[signerIndex!]!.id })),
    })),
    participants,
    ...pick(input, [
      'notifyParticipants',
      'signingOrder',
      'personalizedMessage',
      'emailSubject',
      'evault',
      'sendFinalEnoteTo',
      'taggingOrganizationId',
      'taggingUserId',
    ]),
  };
}

/** The listed keys of `from` that are defined (the provider's schema has no nulls). */
function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (from[k] !== undefined) out[k] = from[k];
  return out;
}

async function validInput(raw: EsignTransactionInput): Promise<ValidEsignTransactionInput> {
  // Histories recorded before validation left the workflow sandbox have no marker here; their input was validated then.
  if (!patched(INPUT_VALIDATED_OUTSIDE_SANDBOX)) return withInputDefaults(raw);
  try {
    return await checks.validateTransactionInput(raw);
  } catch (err) {
    // A refused input (or callback URL) fails the workflow with the activity's own type and message.
    if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
      throw ApplicationFailure.nonRetryable(err.cause.message, err.cause.type);
    }
    throw err;
  }
}

/** The schema's defaults, for replaying histories whose input was validated inside the workflow. */
function withInputDefaults(raw: EsignTransactionInput): ValidEsignTransactionInput {
  return {
    ...raw,
    status: raw.status ?? INPUT_DEFAULTS.status,
    signingDeadline: raw.signingDeadline ?? INPUT_DEFAULTS.signingDeadline,
    reconcileInterval: raw.reconcileInterval ?? INPUT_DEFAULTS.reconcileInterval,
    documents: raw.documents.map((d) => ({ ...d, tags: (d.tags ?? []).map((t) => ({ ...t, customData: t.customData ?? {} })) })),
  };
}
