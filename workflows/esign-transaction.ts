/**
 * One signature transaction, from PDFs to its end at the provider:
 * upload -> create -> (draft -> send) -> wait for the provider's end (webhook
 * signals, reconciliation polls, the deadline, a cancel) -> confirm ->
 * archive when completed -> report. It never reports `cancelled` or `expired`
 * while the provider's transaction can still complete: it withdraws it first.
 * The state and its moves are in ./transaction/ (docs/workflow.md draws them);
 * this function keeps the steps and the wait.
 */
import {
  condition,
  allHandlersFinished,
  continueAsNew,
  makeContinueAsNewFunc,
  setWorkflowOptions,
  log,
  metricMeter,
  setCurrentDetails,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { endStatusOf, ESIGN_DELETED_EVENT, isProviderEndStatus } from '../src/esign/events.js';
import { INPUT_DEFAULTS } from '../src/transaction/defaults.js';
import type { EsignTransactionInput, ValidEsignTransactionInput } from '../src/transaction/input.js';
import { durationToMs } from '../src/util/duration.js';
import { PROVIDER, step, UPLOAD } from './activity-options.js';
import type { EsignTransactionResult } from '../src/definitions/transaction.js';
import { Progress } from './progress.js';
import { buildCreateRequest, validInput } from './requests.js';
import { EsignId, EsignReferenceId, EsignStatus, EsignTransactionId } from '../src/definitions/search-attributes.js';
import { Clock } from './clock.js';
import { Approvals } from './transaction/approving.js';
import { Corrections } from './transaction/correcting.js';
import { Endings } from './transaction/endings.js';
import { registerHandlers, Requests } from './transaction/handlers.js';
import { Integrator } from './transaction/integrator.js';
import type { ContinuedTransaction } from './transaction/continued.js';
import { SigningTransaction } from './transaction/machine.js';
import { READ_AGAIN_MS, readState, Steps, type Reading } from './transaction/steps.js';
import { awaitArchiveRetry } from './transaction/refused-archive.js';
import { handOnStrays } from './transaction/strays.js';
import { waitSummary } from './transaction/view.js';
import { versioningBehavior } from './versioning.js';

export type { ContinuedTransaction } from './transaction/continued.js';
/** Our own bound on one run's history, whatever the server suggests (docs/workflow.md, "Bounded history"). */
export const MAX_EVENTS_PER_RUN = 2_000;
const BACKOFF = 1.5;

export async function esignTransaction(rawInput: EsignTransactionInput, continued?: ContinuedTransaction): Promise<EsignTransactionResult> {
  // Handlers first, so that an update sent with the start (update-with-start) finds its handler.
  const clock = new Clock();
  const tx = new SigningTransaction(continued);
  const steps = new Steps(clock);
  const integrator = new Integrator(tx, steps, clock);
  const endings = new Endings(tx, steps, integrator);
  const corrections = new Corrections(tx, steps, integrator, clock);
  const approvals = new Approvals(tx, steps, integrator, clock);
  registerHandlers(
    tx,
    new Requests(tx, steps),
    corrections,
    approvals,
    // Validators read the clock without keeping it: a replay does not run them (./clock.ts).
    () => clock.peek(),
    () => rawInput?.referenceId,
  );

  // ---------------------------------------------- 0. validate the input
  const valid = continued ? (rawInput as ValidEsignTransactionInput) : await validInput(rawInput);
  clock.localActivityResolved();
  tx.input = valid;
  const reconcileMs = durationToMs(valid.reconcileInterval);
  const maxPollMs = Math.max(reconcileMs, durationToMs(valid.reconcileMaxInterval ?? INPUT_DEFAULTS.reconcileMaxInterval));
  const maxEvents = valid.maxHistoryEvents ?? MAX_EVENTS_PER_RUN;

  if (!continued) {
    // Counted from the recorded start: the clock after the local activity above may differ on replay.
    tx.deadlineAt = workflowInfo().startTime.getTime() + durationToMs(valid.signingDeadline);
    // Participant ids are generated here when the caller gave none: uuid4() is deterministic on replay.
    tx.participants = valid.participants.map((p) => ({ ...p, id: p.id ?? uuid4() }));
    tx.progress = new Progress(tx.participants);
    tx.pollMs = reconcileMs;
    tx.attributes.set([
      { key: EsignReferenceId, value: valid.referenceId },
      { key: EsignStatus, value: tx.phase },
    ]);
    metricMeter.createCounter('esign_transactions_started', 'transactions', 'Transactions started').add(1);

    // ------------------------------------------------------- 1. upload PDFs
    const uploaded = await step(UPLOAD, `Upload ${valid.documents.length} document(s)`).uploadDocuments({
      documents: valid.documents.map((d) => ({ title: d.title, source: d.source })),
    });
    // Absent from workers older than the evidence checks (and from replayed histories of them).
    tx.originals = uploaded.sha256 ?? {};
    // Nothing exists at the provider yet: a cancel needs no withdraw.
    if (tx.cancel) return endings.ended('cancelled', tx.cancel.reason, 'request');

    // ------------------------------------------- 2. create the transaction
    tx.moveTo('creating');
    tx.request = buildCreateRequest(valid, tx.participants, uploaded.storagePaths);
    const ref = await step(PROVIDER, `Create the transaction (${tx.request.status})`).createTransaction(tx.request);
    tx.created = { transactionId: ref.transactionId, esignId: ref.esignId };
    tx.providerStatus = ref.status;
    tx.attributes.set([
      { key: EsignTransactionId, value: ref.transactionId },
      { key: EsignId, value: ref.esignId },
    ]);
    // The bridge routes webhooks here by the provider's record (docs/webhooks.md): some may have come already.
    tx.adoptEarly();
    if (valid.approval) approvals.begin();
    else tx.moveTo(valid.status === 'draft' ? 'draft' : 'awaiting_signatures');
    integrator.planFirstReminder();
  } else {
    setCurrentDetails(tx.currentDetails());
    tx.attributes.set([
      { key: EsignReferenceId, value: valid.referenceId },
      { key: EsignTransactionId, value: tx.created!.transactionId },
      { key: EsignId, value: tx.created!.esignId },
      { key: EsignStatus, value: tx.phase },
    ]);
    // The bridge signals the workflow id, not a run: webhooks reach this run as they reached the last.
  }
  const read = (summary: string, reading?: Reading) => readState(steps, tx, summary, reading);
  // A pinned run stays on its code; the next run moves to the deployment's current version when that changed.
  const handOver = () =>
    workflowInfo().targetWorkerDeploymentVersionChanged
      ? makeContinueAsNewFunc<typeof esignTransaction>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(valid, tx.carry())
      : continueAsNew<typeof esignTransaction>(valid, tx.carry());

  // ------------------------------------- 3. follow the transaction to its end
  let quietSince = tx.activity;
  for (;;) {
    if (tx.held.strays.length > 0) {
      await handOnStrays(tx, steps);
      continue;
    }
    if (tx.phase === 'archive_invalid') {
      const next = await awaitArchiveRetry(tx, endings, integrator, { maxEvents, maxPollMs });
      if (next === 'handOver') return handOver();
      if (next) return next;
      continue;
    }
    if (tx.cancel && !tx.cancel.refused) {
      const end = await endings.withdrawOrFollow('cancel', tx.cancel);
      if (end) return end;
    }
    if (tx.phase === 'awaiting_approval' && approvals.due()) {
      // Approved (sent now), rejected, past a deadline (a draft: ended, never withdrawn), or a reminder due.
      const end = await approvals.act(endings);
      if (end) return end;
      continue;
    }
    if (tx.phase !== 'overdue' && tx.phase !== 'awaiting_approval' && tx.open && clock.now() >= tx.deadlineAt) {
      const end = await endings.withdrawOrFollow('deadline');
      if (end) return end;
    }

    if (tx.notified) {
      // --------------------------------- 4. confirm with the provider, then end (archiving a completion)
      const announced = tx.notified;
      // Cleared before the read: a completion announced while it runs is confirmed next, not forgotten.
      tx.notified = undefined;
      const confirmed = await read(`Confirm with the provider (${announced})`, announced === ESIGN_DELETED_EVENT ? 'deletion' : 'read');
      // Refused: the next poll reads it again (a completion is then confirmed as any other).
      if (!confirmed) continue;
      const end = await endings.follow(confirmed, true);
      if (end) return end;
      if (tx.open)
        log.warn('notified of an end the provider does not confirm; waiting on', {
          announced: endStatusOf(announced),
          providerStatus: tx.providerStatus,
        });
      continue;
    }

    if (tx.progressStale) {
      // A participant event: the record says who did what (webhooks only hint, and may come out of order).
      tx.progressStale = false;
      const state = await read("Read the participants' progress");
      const end = state && (await endings.follow(state));
      if (end) return end;
      continue;
    }

    if (integrator.reminderDue()) {
      const fresh = await read('Check who still has to sign');
      if (!fresh) {
        integrator.postponeReminder('the provider refused to say who still has to sign');
        continue;
      }
      const end = await endings.follow(fresh);
      if (end) return end;
      // Not when the read found it completed, or a replace made it a draft meanwhile.
      if (fresh.status !== 'completed' && tx.phase === 'awaiting_signatures') await integrator.remind();
      continue;
    }

    if (tx.historyFull(maxEvents)) {
      // Events in flight and handlers that finish on their own finish first; work a message brought
      // meanwhile (a cancel, a notification) is done before the hand-over, never waited on.
      // An approval decided meanwhile is work too: a signing URL asked after the quorum waits for the send.
      const work = () => tx.hasWork() || approvals.decided();
      await condition(() => (integrator.settled && allHandlersFinished()) || work());
      if (!work()) return handOver();
      continue;
    }

    // ------------------------------------------------- wait for news
    const waitingIn = tx.phase;
    tx.rescheduled = false; // planned below with the deadline as it is now
    const now = clock.now();
    const remaining = tx.deadlineAt - now;
    if (tx.activity !== quietSince) {
      tx.pollMs = reconcileMs;
      quietSince = tx.activity;
    }
    const interval = Math.round(Math.min(tx.pollMs, tx.readSoon ? READ_AGAIN_MS : Infinity) * (0.9 + 0.2 * Math.random()));
    // A draft waits for replaceTransaction to send it (a phase change), not for polls, waking at the longest poll
    // interval only to see whether its version changed (as a refused archive does), and so does one awaiting its
    // approvers (woken by their answers, their deadline and reminders); an overdue one has no deadline.
    const untilReminder =
      tx.reminders.nextAt !== null && waitingIn === 'awaiting_signatures' ? Math.max(0, tx.reminders.nextAt - now) : Infinity;
    const parked = waitingIn === 'draft' || waitingIn === 'awaiting_approval';
    const wait = parked
      ? Math.min(remaining, maxPollMs, approvals.waitMs(now))
      : waitingIn === 'overdue'
        ? interval
        : Math.min(interval, remaining, untilReminder);
    const summary = waitSummary(waitingIn, clock.iso(waitingIn === 'draft' ? tx.deadlineAt : now + wait));
    const woke = await condition(() => tx.hasWork() || tx.phase !== waitingIn || tx.rescheduled, wait, { summary });
    if (woke || parked || (waitingIn !== 'overdue' && clock.now() >= tx.deadlineAt)) continue;
    if (integrator.reminderDue()) continue;

    // ------------------------------- reconciliation: a webhook may be lost
    const polled = await read('Check the provider (a webhook may be lost)', 'poll');
    // Not answered: the next poll reads again (soon after a 404: a second one ends it `deleted`).
    if (!polled) continue;
    tx.lastReconciledAt = clock.iso();
    const end = await endings.follow(polled);
    if (end) return end;
    if (!isProviderEndStatus(polled.status)) tx.pollMs = Math.min(maxPollMs, tx.pollMs * BACKOFF);
  }
}

// Pinned: a run lives on the code it started with (months, a year); it moves only at continue-as-new (handOver).
setWorkflowOptions(versioningBehavior('PINNED'), esignTransaction);
