/**
 * What must hold after every schedule, whatever it did:
 *
 * - ended: the workflow ended, with a result (not failed, not stalled);
 * - outcome: the result is the provider's final state (a completion is
 *   completed, a decline declined, the provider's own end that end);
 * - never-early: it never reported `cancelled` or `expired` while the
 *   provider could still complete the transaction;
 * - archived-once: every transaction the provider completed was archived,
 *   exactly once, by the workflow or, after its end, by the late path;
 * - created-once: one provider transaction per referenceId;
 * - messages: each update's answer agrees with the end (a cancel that
 *   returned, returned the result; `TransactionFinished` only for a
 *   completion; `WithdrawRefused` only when someone had signed), and none
 *   was left unanswered;
 * - workflow-tasks: no workflow task failed (the server's refusal of a
 *   completion because a message arrived meanwhile is not a failure);
 * - replay: every history the schedule produced replays against the code;
 * - late-path: the inbox and any late completion ended too;
 * - events: with a callback, the event log delivered the transaction's events
 *   in sequence order, 1 to n with no gap, the outcome last (but for a late
 *   completion's event, numbered after it);
 * - approvals: a transaction with approvers is never sent unapproved, and ends
 *   as its approvers' answers say (explore/approval-checks.ts).
 *
 * After the operator's and the server's moves, explore/operation-checks.ts adds `upkeep` (every evidence upkeep walk)
 * and `versioning` (every run told its target version changed, or to continue as new); what a terminate allows is
 * said where it changes a check here (archived-once, events).
 */
import proto from '@temporalio/proto';
import { FailureType } from '../src/failures.js';
import type { EsignTransactionResult, EsignTransactionStatus } from '../src/definitions/transaction.js';
import type { MessageOutcome, Observation, PartRecord, RecordedHistory } from './observation.js';
import type { ModelTransaction } from './provider-model.js';
import type { Replayer } from './lane.js';
import { QUERY_LOST_IN_RESTART } from './sticky-queues.js';
import { QUERY_LOST_TO_CONTINUE_AS_NEW } from './queries.js';
import { appliedDeadline } from './deadlines.js';
import { millis } from './timers.js';
import { EsignStatus } from '../src/definitions/search-attributes.js';
import { checkOperations, SERVER_SUGGESTS_CONTINUE_AS_NEW_AT } from './operation-checks.js';
import { checkApprovalQuery, checkApprovals, decoded } from './approval-checks.js';
import { checkRecords } from './records-checks.js';

export type CheckName =
  | 'ended'
  | 'outcome'
  | 'never-early'
  | 'archived-once'
  | 'created-once'
  | 'messages'
  | 'workflow-tasks'
  | 'replay'
  | 'late-path'
  | 'events'
  | 'history-bound'
  | 'upkeep'
  | 'versioning'
  | 'participants'
  | 'approvals'
  | 'records';

export interface Finding {
  check: CheckName;
  detail: string;
}

const { EventType, WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;
/** Causes that are the server's doing, not the code's: a completion refused because a message arrived meanwhile. */
const BENIGN_TASK_FAILURES = new Set<number>([
  WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
  WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
]);

/** How far past its bound a run's history may go: the bound is checked between steps, and one step adds events. */
export const HISTORY_BOUND_SLACK = 100;
/** How long after its deadline (beyond two polls) a withdraw may come: retries of the reads and the withdraw. */
const DEADLINE_SLACK_MS = 30 * 60_000;
/** The transaction workflow's own bound when its input gives none (workflows/esign-transaction.ts). */
const DEFAULT_HISTORY_BOUND = 2_000;
/** The event log's (workflows/event-log.ts `MAX_HISTORY`). */
const EVENT_LOG_HISTORY_BOUND = 5_000;

/** A query the test server never answered for its own reasons (explore/sticky-queues.ts, explore/queries.ts). */
function lostByTestServer(message: string | undefined): boolean {
  return message !== undefined && (message.includes(QUERY_LOST_IN_RESTART) || message.includes(QUERY_LOST_TO_CONTINUE_AS_NEW));
}

/** Whether an operator terminated the late completion of `transactionId`, and no completion webhook came after that. */
function lateLeftTerminated(observation: Observation, transactionId: string): boolean {
  const ops = observation.operations;
  const terminated = ops?.terminations.filter((x) => x.workflow === 'lateCompletion' && x.terminated && x.transactionId === transactionId);
  const last = terminated?.at(-1);
  return !!last && !ops!.completionsAgain.some((c) => c.transactionId === transactionId && c.at >= last.at);
}

/** How many times an operator terminated the late completion of `transactionId`. */
function lateTerminations(observation: Observation, transactionId: string): number {
  return (
    observation.operations?.terminations.filter((x) => x.workflow === 'lateCompletion' && x.terminated && x.transactionId === transactionId)
      .length ?? 0
  );
}

export async function check(observation: Observation, replayer: Replayer | undefined): Promise<Finding[]> {
  const findings: Finding[] = [];
  const found = (check: CheckName, detail: string) => findings.push({ check, detail });
  const { model, referenceId, schedule } = observation;
  const parts: PartRecord[] = observation.parts ?? [
    {
      setup: schedule.setup,
      end: observation.end,
      atEnd: observation.atEnd,
      participantIds: [],
      startedAt: observation.startedAt,
      histories: [],
    },
  ];
  const many = parts.length > 1;
  const results: (EsignTransactionResult | undefined)[] = [];
  if (observation.bulk) checkBulk(observation, found);
  else
    for (const [i, part] of parts.entries()) {
      const label = many ? `transaction ${i + 1}: ` : '';
      results.push(checkTransaction(observation, part, i, (c, d) => found(c, `${label}${d}`)));
    }

  // -------------------------------------------------------- archived-once
  const ours = observation.bulk ? [...model.transactions.values()] : model.byReference(referenceId);
  for (const t of ours) {
    const commits = model.archives.filter((a) => a.transactionId === t.id);
    // A late completion an operator terminated before it archived, with no completion after: nothing archives it.
    if (t.status === 'completed' && commits.length === 0 && lateLeftTerminated(observation, t.id)) continue;
    if (t.status === 'completed' && commits.length !== 1) {
      found(
        'archived-once',
        `transaction ${t.id} completed at the provider and was archived ${commits.length} times (${commits.map((c) => c.key).join(', ') || 'never'})`,
      );
    }
    if (t.status !== 'completed' && commits.length > 0) found('archived-once', `transaction ${t.id} is ${t.status} but was archived`);
    // Each archive (the workflow's or a late one) under the prefix of the run that created the transaction.
    const prefix = parts[t.part]?.setup.archivePrefix;
    const key = prefix ? `${prefix}/${t.id}` : t.id;
    for (const c of commits)
      if (c.key !== key) found('archived-once', `transaction ${t.id} was archived as ${c.key}, not under its own run's prefix (${key})`);
  }

  // --------------------------------------------------------- participants
  // Corrections change who signs: what the workflow archives with must be who the provider had sign, in order.
  for (const t of ours)
    for (const c of model.archives.filter((a) => a.transactionId === t.id && a.participantIds)) {
      const provider = t.body.participants.map((p) => p.id).join(', ');
      if (c.participantIds!.join(', ') !== provider)
        found(
          'participants',
          `transaction ${t.id} was archived with participants ${c.participantIds!.join(', ')}; the provider's are ${provider}`,
        );
    }

  // ------------------------------------------------------- workflow tasks
  for (const h of observation.histories) {
    for (const e of h.history.events ?? []) {
      if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) continue;
      const attributes = e.workflowTaskFailedEventAttributes;
      if (BENIGN_TASK_FAILURES.has(attributes?.cause ?? 0)) continue;
      found(
        'workflow-tasks',
        `${h.workflowId} (run ${h.runId}) event ${String(e.eventId)}: workflow task failed (${WorkflowTaskFailedCause[attributes?.cause ?? 0]}): ${attributes?.failure?.message ?? ''}`,
      );
    }
  }

  // -------------------------------------------------------- history bound
  if (observation.bulk)
    for (const h of observation.histories) {
      const length = h.history.events?.length ?? 0;
      if (h.workflowId === observation.bulk.batchId && length > DEFAULT_HISTORY_BOUND + HISTORY_BOUND_SLACK)
        found('history-bound', `the batch's run ${h.runId} has ${length} events; its bound is ${DEFAULT_HISTORY_BOUND}`);
    }
  if (observation.parts) {
    const earlier = new Map(parts.flatMap((p, i) => p.histories.map((h) => [h.runId, i] as const)));
    for (const h of observation.histories) {
      if (h.workflowId !== observation.workflowId) continue;
      const setup = parts[earlier.get(h.runId) ?? parts.length - 1]!.setup;
      const bound = setup.maxHistoryEvents ?? DEFAULT_HISTORY_BOUND;
      const length = h.history.events?.length ?? 0;
      if (length > bound + HISTORY_BOUND_SLACK)
        found(
          'history-bound',
          `run ${h.runId} has ${length} events; its bound is ${bound} (+${HISTORY_BOUND_SLACK} for the step that crosses it)`,
        );
    }
  }

  // The workflows around the transaction: the event log's own bound, and where a real server suggests continuing
  // as new for those that never do (the inbox, a late completion: both short-lived).
  for (const h of observation.histories) {
    const bound = h.workflowId.startsWith('esign-events-')
      ? EVENT_LOG_HISTORY_BOUND
      : h.workflowId.startsWith('esign-inbox-') || h.workflowId.startsWith('esign-late-')
        ? SERVER_SUGGESTS_CONTINUE_AS_NEW_AT
        : undefined;
    const length = h.history.events?.length ?? 0;
    if (bound !== undefined && length > bound + HISTORY_BOUND_SLACK)
      found('history-bound', `${h.workflowId} (run ${h.runId}) has ${length} events; its bound is ${bound}`);
  }

  // --------------------------------------------------------------- replay
  if (replayer) {
    for (const h of observation.histories) {
      const error = await replayer.replay(h.workflowId, h.history);
      if (error) found('replay', `${h.workflowId} (run ${h.runId}) does not replay: ${error}`);
    }
  }

  // ------------------------------------------------ the operator's late retries
  for (const m of observation.messages) {
    if (m.kind !== 'lateRetry' || m.outcome === 'pending') continue;
    if (m.expected === 'refused' && !(m.outcome === 'failed' && m.type === FailureType.ArchiveInvalid))
      found('messages', `${m.step}: a retry of a ZIP still refused answered ${m.outcome} ${m.type ?? ''} ${m.message ?? ''}`);
    if (m.expected === 'archived') {
      const zip = model.transactions.get(m.transactionId ?? '')?.zip;
      const answer = m.value as EsignTransactionResult | undefined;
      if (m.outcome !== 'ok' || answer?.status !== 'completed' || answer.archive?.sha256 !== zip?.sha256)
        found('messages', `${m.step}: a retry after the fix answered ${m.outcome} ${m.type ?? answer?.status ?? ''} ${m.message ?? ''}`);
    }
  }

  // ------------------------------------------------------------ late path
  for (const id of observation.stillOpen) found('late-path', `${id} was still running 8 days after the transaction ended`);

  // --------------------------------------------------------------- events
  const result = results[0];
  if ((schedule.kind ?? 'transaction') === 'transaction' && schedule.setup.callback && result) {
    // First deliveries only: a retried attempt repeats an event with its sequence, which the receiver deduplicates.
    const firsts: number[] = [];
    for (const e of model.events.filter((x) => x.via === 'attemptLoggedEvent'))
      if (e.sequence !== undefined && !firsts.includes(e.sequence)) firsts.push(e.sequence);
    const expected = Array.from({ length: firsts.length }, (_, i) => i + 1);
    if (firsts.join(',') !== expected.join(','))
      found('events', `the event log delivered sequences ${firsts.join(', ')}, not 1 to ${firsts.length} in order`);
    // The outcome closes the transaction's own events; only a late completion's may follow it (its archive, or a
    // refusal of its ZIP).
    const lateTypes = ['transaction.completed_late', 'transaction.archive_invalid'];
    const delivered = model.events.filter((x) => x.via === 'attemptLoggedEvent');
    const outcome = delivered.findIndex((x) => x.type === `transaction.${result.status}`);
    // (A retry of an attempt whose answer was lost sends the outcome again, with its key.)
    const after =
      outcome < 0 ? [] : delivered.slice(outcome + 1).filter((x) => !lateTypes.includes(x.type) && x.key !== delivered[outcome]!.key);
    // Not delivered at all is excused only when its hand-over read the closed log by a query the test server left on a
    // restarted worker's queue (explore/sticky-queues.ts): a real server answers it.
    if ((outcome < 0 && !outcomeLostToRestart(chainOf(observation, parts, 0), `transaction.${result.status}`)) || after.length > 0)
      found(
        'events',
        `the last event delivered is ${(after.at(-1) ?? delivered.filter((x) => x.type !== 'transaction.completed_late').at(-1))?.type ?? 'none'}, not transaction.${result.status}`,
      );
  }
  if (!observation.bulk && schedule.setup.callback) checkEventLog(observation, parts, results, found);
  checkOperations(observation, found);
  checkRecords(observation, found);
  return findings;
}

/**
 * A bulk send: it ended, `cancelled` when a cancel was taken and `done` otherwise; every row started once (all of
 * them unless cancelled), each row's transaction ended true to the provider (the transaction's own checks), the
 * result's counts are the rows' ends, and a cancel after the end is refused.
 */
function checkBulk(observation: Observation, found: (check: CheckName, detail: string) => void): void {
  const { model } = observation;
  const batch = observation.bulk!;
  const setup = observation.schedule.bulk!;
  if (batch.end.kind === 'stalled') found('ended', `the batch did not end: ${batch.end.where}`);
  else if (batch.end.kind !== 'result') found('ended', `the batch ${batch.end.kind}: ${'message' in batch.end ? batch.end.message : ''}`);
  const cancels = observation.messages.filter((m) => m.kind === 'bulkCancel');
  const taken = cancels.some((m) => m.outcome === 'ok');
  for (const m of cancels) {
    if (m.outcome === 'pending') {
      if (batch.end.kind === 'result') found('messages', `${m.step} was never answered`);
      continue;
    }
    const refused = m.outcome !== 'ok';
    if (m.step.startsWith('late') && !refused) found('messages', `${m.step} was taken after the batch ended`);
    if (refused && m.type !== FailureType.TransactionFinished && m.type !== 'BatchEnded')
      found('messages', `${m.step} failed: ${m.type ?? ''} ${m.message ?? ''}`);
  }
  const rowResults: EsignTransactionResult[] = [];
  for (const [i, row] of batch.rows.entries()) {
    const label = `row ${i + 2}: `;
    const at = (c: CheckName, d: string) => found(c, `${label}${d}`);
    const created = model.byReference(row.referenceId);
    if (created.length > 1) at('created-once', `${created.length} provider transactions for ${row.referenceId}`);
    if (!row.end) {
      if (!taken) at('outcome', 'never started, though the batch was not cancelled');
      continue;
    }
    const part: PartRecord = {
      setup: observation.schedule.setup,
      end: row.end,
      atEnd: created.map((t) => ({ id: t.id, status: t.status, everSigned: t.everSigned })),
      participantIds: [],
      startedAt: row.startedAt ?? 0,
      histories: [],
    };
    const result = checkTransaction({ ...observation, referenceId: row.referenceId, messages: [], parts: undefined }, part, 0, at);
    if (result) rowResults.push(result);
  }
  if (batch.end.kind !== 'result') return;
  const result = batch.end.result;
  const expected = taken ? 'cancelled' : 'done';
  if (result.phase !== expected)
    found('outcome', `the batch ended ${result.phase}, not ${expected}${taken ? ' (a cancel was taken)' : ''}`);
  if (result.rows !== setup.rows) found('outcome', `the batch counted ${result.rows} rows of ${setup.rows}`);
  const started = batch.rows.filter((r) => r.end).length;
  if (result.started !== started) found('outcome', `the batch says ${result.started} rows started; ${started} transactions ran`);
  const completed = rowResults.filter((r) => r.status === 'completed').length;
  if (result.completed !== completed || result.inFlight + result.waiting !== 0)
    found(
      'outcome',
      `the batch's counts ${JSON.stringify({ ...result, firstInvalid: undefined })} are not its rows' ends (${completed} completed)`,
    );
}

/** One transaction's end, outcome, answers and queries. */
function checkTransaction(
  observation: Observation,
  part: PartRecord,
  index: number,
  found: (check: CheckName, detail: string) => void,
): EsignTransactionResult | undefined {
  const { model, referenceId } = observation;
  const { end, atEnd } = part;
  // ---------------------------------------------------------------- ended
  if (end.kind === 'not-started') found('ended', `the workflow did not start: ${end.message}`);
  // An event log terminated before a worker restart is read through a query the test server leaves on the dead
  // worker's queue for ever (explore/sticky-queues.ts; a real server moves it after a few seconds): the transaction
  // waits to number its next event, which is the test server's limit, not a stall of the workflow's.
  else if (end.kind === 'stalled' && !end.where.includes(QUERY_LOST_IN_RESTART)) found('ended', `the workflow did not end: ${end.where}`);
  else if (end.kind === 'failed') found('ended', `the workflow failed (${end.type ?? 'no type'}): ${end.message}`);

  // ----------------------------------------------- outcome and never-early
  const ours = model.byReference(referenceId).filter((t) => t.part === index);
  if (ours.length > 1) found('created-once', `${ours.length} provider transactions for referenceId ${referenceId}`);
  const result = end.kind === 'result' ? end.result : undefined;
  if (result) {
    const tx = atEnd.find((t) => t.id === result.transactionId) ?? atEnd.find((t) => ours.some((o) => o.id === t.id));
    const status = tx?.status ?? 'none';
    const allowed: Record<string, readonly string[]> = {
      completed: ['completed'],
      declined: ['declined'],
      deleted: ['deleted'],
      // Ended by the caller or the deadline: withdrawn (a draft), or nothing was created yet; the provider may end
      // a draft on its own afterwards. Ended by the provider: its own end.
      cancelled: result.endedBy === 'provider' ? ['cancelled'] : ['draft', 'none', 'cancelled', 'expired', 'deleted'],
      expired: result.endedBy === 'provider' ? ['expired'] : ['draft', 'none', 'cancelled', 'expired', 'deleted'],
      // Rejected before it was sent: still the draft its approvers saw (the provider may end it on its own afterwards).
      rejected: ['draft', 'cancelled', 'expired', 'deleted'],
    };
    if ((result.status === 'cancelled' || result.status === 'expired') && (status === 'esign_pending' || status === 'completed')) {
      found(
        'never-early',
        `reported ${result.status} (ended by ${result.endedBy ?? '?'}) while the provider's transaction was ${status}` +
          (status === 'esign_pending' ? ' and could still complete' : ''),
      );
    } else if (!allowed[result.status]?.includes(status)) {
      found('outcome', `reported ${result.status} (ended by ${result.endedBy ?? '?'}) but the provider's transaction was ${status}`);
    }
    // Every outcome says who ended the transaction (request, deadline, signer, provider…): runs on this code always do.
    if (result.status !== 'completed' && !result.endedBy) found('outcome', `reported ${result.status} without saying who ended it`);
    if (result.status === 'completed' && tx) {
      const zip = model.transactions.get(tx.id)?.zip;
      if (result.archive?.sha256 !== zip?.sha256)
        found('outcome', `completed with archive ${result.archive?.sha256 ?? 'none'}, but the provider's ZIP is ${zip?.sha256 ?? 'none'}`);
    }
    if (observation.parts) checkEndedBy(observation, part, index, result, chainOf(observation, observation.parts, index), found);
  }
  // Approvers: never sent unapproved, an outcome true to their answers (explore/approval-checks.ts).
  if (observation.parts) checkApprovals(observation, part, index, result, ours, chainOf(observation, observation.parts, index), found);

  // ------------------------------------------------------------- messages
  const signed = ours.some((t) => t.everSigned);
  for (const m of observation.messages) {
    if ((m.part ?? 0) !== index) continue;
    const what = `${m.step}`;
    if (m.outcome === 'pending') {
      if (end.kind === 'result') found('messages', `${what} was never answered`);
      continue;
    }
    if (m.kind === 'query' && m.outcome !== 'ok' && !lostByTestServer(m.message)) {
      // A query answers from the workflow's state, replayed if need be: it never fails on a workflow that exists.
      found('messages', `${what} failed: ${m.type ?? ''} ${m.message ?? ''}`);
      continue;
    }
    if (m.kind === 'query' && m.outcome === 'ok' && observation.parts) {
      checkQuery(observation, part, ours, m, found);
      checkApprovalQuery(observation, part, index, m, found);
    }
    if (m.kind === 'cancel' && m.outcome === 'ok' && result && (m.value as { status?: string })?.status !== result.status) {
      found('messages', `${what} returned ${(m.value as { status?: string })?.status}, but the workflow ended ${result.status}`);
    }
    if (m.kind === 'cancel' && m.type === FailureType.TransactionFinished && result && result.status !== 'completed')
      found('messages', `${what} failed with TransactionFinished, but the workflow ended ${result.status}`);
    if (m.kind === 'cancel' && m.type === FailureType.WithdrawRefused) {
      if (!signed) found('messages', `${what} was refused (WithdrawRefused) though nobody had signed: ${m.message ?? ''}`);
    }
    if (m.kind === 'signingUrl' && m.outcome === 'ok' && m.participantId) {
      // The provider's URL for the participant asked for, of this transaction.
      // (Update-with-start answers with the workflow's handle and `signingUrl`.)
      const answer = m.value as { url?: string; signingUrl?: string; transactionId?: string };
      const url = answer.url ?? answer.signingUrl;
      const tx = ours[0];
      if (!tx || url !== `https://provider.invalid/sign/${tx.esignId}/${m.participantId}` || answer.transactionId !== tx.id)
        found(
          'messages',
          `${what} answered ${url ?? 'no URL'} of ${answer.transactionId ?? 'no transaction'}, not the provider's URL for ${m.participantId} of ${tx?.id ?? 'none'}`,
        );
    }
    if (m.kind === 'replace' && m.outcome === 'ok' && m.asked) {
      // The provider's record after the replace: the status asked for, which the provider's trail shows it made.
      const status = (m.value as { status?: string })?.status;
      const by = m.asked === 'draft' ? 'withdraw or replace to draft' : 'replace to esign_pending';
      if (status !== m.asked || !ours.some((t) => t.trail.some((x) => x.status === m.asked && x.by === by)))
        found('messages', `${what} to ${m.asked} answered ${status ?? 'nothing'}, but the provider never made it ${m.asked} for a replace`);
    }
    if (m.kind === 'retryArchive' && m.outcome === 'ok' && (m.value as { status?: string })?.status !== 'completed')
      found('messages', `${what} returned ${(m.value as { status?: string })?.status}`);
    if (m.kind === 'retryArchive' && m.type === FailureType.ArchiveInvalid && model.refusals.length <= (m.refusalsAtAsk ?? 0))
      found('messages', `${what} answered ArchiveInvalid ("refused again") though no archive was refused after it was asked`);
  }
  return result;
}

/**
 * The runs of a schedule's transaction `index`: collected as it ended (an earlier one of a reused referenceId), or at
 * the end (the last).
 */
function chainOf(observation: Observation, parts: readonly PartRecord[], index: number): RecordedHistory[] {
  if (index < parts.length - 1) return parts[index]!.histories;
  const earlier = new Set(parts.slice(0, index).flatMap((p) => p.histories.map((h) => h.runId)));
  return observation.histories.filter((h) => h.workflowId === observation.workflowId && !earlier.has(h.runId));
}

/** `endedBy` names who ended it, and an expiry by the deadline never comes before the deadline. */
function checkEndedBy(
  observation: Observation,
  part: PartRecord,
  index: number,
  result: EsignTransactionResult,
  chain: readonly RecordedHistory[],
  found: (check: CheckName, detail: string) => void,
): void {
  const { endedBy, status } = result;
  if (status === 'declined' && endedBy !== 'signer') found('outcome', `declined, but ended by ${endedBy ?? '?'}, not by the signer`);
  if (status === 'deleted' && endedBy !== 'provider') found('outcome', `deleted, but ended by ${endedBy ?? '?'}, not by the provider`);
  if (endedBy === 'request' && !observation.messages.some((m) => (m.part ?? 0) === index && m.kind === 'cancel'))
    found('outcome', `${status}, ended by request, but nobody asked to cancel`);
  if (endedBy === 'deadline') {
    // The deadline as the last correction the workflow applied left it (its history says to when: explore/deadlines.ts),
    // else the input's; or, expired awaiting approval, its approvers' deadline.
    const approvers = part.setup.approval && result.reason?.startsWith('approval deadline passed') ? part.setup.approval : undefined;
    const deadline = approvers
      ? part.startedAt + approvers.deadlineMs
      : (appliedDeadline(chain) ?? part.startedAt + part.setup.signingDeadlineMs);
    // Measured to when the run decided its end (its EsignStatus set to it), not to its close: the end's event is then
    // handed to the event log, which may take its retries' hour (a closed log whose query the test server left on a
    // restarted worker's queue, explore/sticky-queues.ts) and would hide an early end or look like a late one.
    const endedAt = Math.min(part.closedAt ?? Infinity, statusSetAt(chain, status) ?? Infinity);
    if (endedAt < deadline - 1_000)
      found('outcome', `${status} by the deadline ${Math.round((deadline - endedAt) / 1000)} s before the deadline`);
    // The deadline holds: the loop withdraws at the deadline, within a poll or two, unless the provider's reads or
    // writes (which the withdraw needs) were down. Later means the loop was held by something else.
    const steps = index === 0 ? observation.schedule.steps : (observation.schedule.next?.[index - 1]?.steps ?? []);
    const needed = steps.some(
      (s) => s.kind === 'providerDown' && (s.operation === 'updateTransaction' || s.operation === 'getTransaction'),
    );
    const late = endedAt === Infinity ? 0 : endedAt - deadline;
    if (!needed && late > 2 * part.setup.reconcileMaxIntervalMs + DEADLINE_SLACK_MS)
      found(
        'outcome',
        `${status} by the deadline ${Math.round(late / 60_000)} min after it: the transaction's loop was held past its deadline`,
      );
  }
  if (endedBy === 'provider' && (status === 'cancelled' || status === 'expired')) {
    const tx = observation.model.transactions.get(result.transactionId ?? '');
    if (tx && !tx.trail.some((s) => s.status === status && s.by === 'provider'))
      found(
        'outcome',
        `${status}, ended by the provider, but the provider never ${status} it (${tx.trail.map((s) => `${s.status} by ${s.by}`).join(', ')})`,
      );
  }
}

/**
 * Whether the outcome event's own hand-over (`appendToEventLog` of that type) failed on a query the test server could
 * not move off a restarted worker's queue.
 */
function outcomeLostToRestart(chain: readonly RecordedHistory[], type: string): boolean {
  return chain.some(({ history }) => {
    const events = history.events ?? [];
    return events.some((e) => {
      const failed = e.activityTaskFailedEventAttributes;
      if (!failed?.failure?.message?.includes(QUERY_LOST_IN_RESTART)) return false;
      const scheduled = events.find((x) => Number(x.eventId) === Number(failed.scheduledEventId))?.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'appendToEventLog') return false;
      const input = decoded(scheduled.input?.payloads?.[0]) as { event?: { type?: string } } | undefined;
      return input?.event?.type === type;
    });
  });
}

/** When the chain's last run first set its `EsignStatus` search attribute to `status` (epoch ms), if it did. */
function statusSetAt(chain: readonly RecordedHistory[], status: string): number | undefined {
  const encoded = JSON.stringify(status);
  for (const e of chain.at(-1)?.history.events ?? []) {
    const data = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[EsignStatus.name]?.data;
    if (data && Buffer.from(data).toString('utf8') === encoded) return millis(e.eventTime);
  }
  return undefined;
}

/** The status query's answer is true to the state: its ids, and no signature or decline the provider has not seen. */
function checkQuery(
  observation: Observation,
  part: PartRecord,
  ours: readonly ModelTransaction[],
  m: MessageOutcome,
  found: (check: CheckName, detail: string) => void,
): void {
  const answer = m.value as EsignTransactionStatus;
  const tx = ours[0];
  if (answer.referenceId !== observation.referenceId) found('messages', `${m.step} answered referenceId ${answer.referenceId}`);
  if (answer.transactionId !== null && answer.transactionId !== tx?.id)
    found('messages', `${m.step} answered transaction ${answer.transactionId}, not ${tx?.id ?? 'none'}`);
  // The input's deadline, or one a correction sent before this query moved it to.
  const deadlines = [
    part.startedAt + part.setup.signingDeadlineMs,
    ...observation.messages
      .slice(0, observation.messages.indexOf(m))
      .filter((c) => c.kind === 'correct' && c.asked === 'deadline' && c.outcome === 'ok')
      .map((c) => Date.parse((c.value as { deadline: { to: string } }).deadline.to)),
  ];
  if (answer.deadline && !deadlines.some((d) => Math.abs(Date.parse(answer.deadline!) - d) <= 5_000))
    found(
      'messages',
      `${m.step} answered the deadline ${answer.deadline}, not ${deadlines.map((d) => new Date(d).toISOString()).join(' or ')}`,
    );
  for (const p of answer.participants) {
    if (p.status !== 'signed' && p.status !== 'declined') continue;
    const at = tx?.participants.find((x) => x.id === p.id)?.status;
    if (at !== p.status)
      found('messages', `${m.step} answered participant ${p.id} ${p.status}, but the provider has them ${at ?? 'unknown'}`);
  }
  if (answer.phase === 'completed' && tx?.status !== 'completed')
    found('messages', `${m.step} answered completed, but the provider's transaction is ${tx?.status ?? 'none'}`);
}

/** The activities (`<runId>/<activityId>`) whose completion their run recorded. */
function answeredActivities(histories: readonly RecordedHistory[]): Set<string> {
  const out = new Set<string>();
  for (const h of histories) {
    const ids = new Map<string, string>();
    for (const e of h.history.events ?? []) {
      if (e.activityTaskScheduledEventAttributes?.activityId) ids.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityId);
      const done = e.activityTaskCompletedEventAttributes?.scheduledEventId;
      if (done !== undefined && done !== null) {
        const id = ids.get(String(done));
        if (id) out.add(`${h.runId}/${id}`);
      }
    }
  }
  return out;
}

/**
 * The event log of a referenceId, over all its transactions, its runs and its redeliveries: numbered 1 to n, one
 * key per number, never numbered again from 1; attempted first in that order; no event delivered twice but those
 * redelivered; one `participant.signed` per signature (none for a participant who did not sign, each for a
 * transaction its run saw complete); one `transaction.archive_invalid` per refused archive; one
 * `transaction.completed_late` per late archive; each transaction's outcome; each redelivery's answer true.
 */
function checkEventLog(
  observation: Observation,
  parts: readonly PartRecord[],
  results: readonly (EsignTransactionResult | undefined)[],
  found: (check: CheckName, detail: string) => void,
): void {
  const { model, referenceId } = observation;
  const view = observation.eventLog;
  if (!view) {
    // A log idle since a worker restart has its next task on the dead worker's queue, where the test server leaves a
    // query (explore/sticky-queues.ts): that log is not observed, rather than failed. A log an operator terminated
    // is read like any closed one (its last state from its history, src/client/event-log-recovery.ts).
    if (model.deliveries.length > 0 && !observation.eventLogError?.includes(QUERY_LOST_IN_RESTART))
      found('events', `the event log could not be read after the end: ${observation.eventLogError ?? ''}`);
    return;
  }
  const events = view.events;
  const sequences = events.map((e) => e.sequence);
  const expected = Array.from({ length: events.length }, (_, i) => i + 1);
  if (sequences.join(',') !== expected.join(','))
    found('events', `the log holds sequences ${sequences.join(', ')}, not 1 to ${events.length}`);
  const byKey = new Map<string, number>();
  for (const e of events) {
    if (byKey.has(e.key)) found('events', `the log holds ${e.key} twice (sequences ${byKey.get(e.key)} and ${e.sequence})`);
    byKey.set(e.key, e.sequence);
  }
  // Every attempt names the number the log holds for its event: a number given again (a restart at 1) shows here.
  const seen = new Map<number, string>();
  const firstAttempts: number[] = [];
  for (const d of model.deliveries) {
    const other = seen.get(d.sequence);
    if (other !== undefined && other !== d.key) {
      found('events', `sequence ${d.sequence} was sent for ${other} and again for ${d.key}: the numbering started again`);
      break;
    }
    if (other === undefined) {
      seen.set(d.sequence, d.key);
      firstAttempts.push(d.sequence);
    }
  }
  for (let i = 1; i < firstAttempts.length; i++)
    if (firstAttempts[i]! <= firstAttempts[i - 1]!) {
      found('events', `events were first sent in the order ${firstAttempts.join(', ')}, not by increasing sequence`);
      break;
    }
  // Delivered (2xx) once per event, more only as often as an operator asked for it again.
  const asked = new Map<number, number>();
  for (const m of observation.messages)
    if (m.kind === 'redeliver' && m.outcome === 'ok')
      for (const n of (m.value as { sequences: number[] }).sequences) asked.set(n, (asked.get(n) ?? 0) + 1);
  const deliveredIn = new Map<string, Set<string>>();
  for (const d of model.deliveries) if (d.delivered) deliveredIn.set(d.key, (deliveredIn.get(d.key) ?? new Set()).add(d.activity));
  // An attempt that reached the endpoint but whose answer its run never recorded (the worker died, or an operator
  // terminated the log before the retry) leaves the event pending: the next run sends it again, as documented
  // (docs/integrator-events.md: at least once, one webhook-id). Each such attempt allows one more delivery.
  const answered = answeredActivities(observation.histories.filter((h) => h.workflowId.startsWith('esign-events-')));
  for (const [key, activities] of deliveredIn) {
    const unanswered = [...activities].filter((a) => !answered.has(a)).length;
    const allowed = 1 + unanswered + (asked.get(byKey.get(key) ?? -1) ?? 0);
    if (activities.size > allowed)
      found('events', `${key} was delivered ${activities.size} times; ${allowed - 1} redelivery(ies) asked for it`);
  }
  // Each redelivery's answer: the events after its number, each sent again afterwards.
  for (const m of observation.messages) {
    if (m.kind !== 'redeliver') continue;
    if (m.outcome === 'ok') {
      const { queued, sequences: named } = m.value as { queued: number; sequences: number[] };
      if (queued !== named.length || named.some((n, i) => n <= (m.after ?? 0) || (i > 0 && n <= named[i - 1]!)))
        found('messages', `${m.step} answered ${JSON.stringify(m.value)} for the events after ${m.after}`);
      const later = model.deliveries.slice(m.deliveriesAtAsk ?? 0);
      for (const n of named)
        if (!later.some((d) => d.sequence === n)) found('events', `${m.step} queued sequence ${n}, which was never sent again`);
    } else if (m.outcome !== 'pending') {
      const before = model.deliveries.slice(0, m.deliveriesAtAsk ?? 0);
      if (before.some((d) => d.sequence > (m.after ?? 0)))
        found('messages', `${m.step} was refused (${m.message ?? m.type ?? ''}) though the log had sent events after ${m.after}`);
    }
  }
  // Signatures, refusals, late archives and outcomes, per provider transaction.
  for (const t of model.byReference(referenceId)) {
    const result = results[t.part];
    for (const p of t.participants) {
      const key = `${t.id}:participant.signed:${p.id}`;
      if (p.status !== 'signed' && byKey.has(key)) found('events', `participant.signed for ${p.id}, who did not sign ${t.id}`);
      if (p.status === 'signed' && result?.status === 'completed' && result.transactionId === t.id && !byKey.has(key))
        found('events', `no participant.signed for ${p.id} of ${t.id}, which its run reported completed`);
    }
    const refused = model.refusals.filter((id) => id === t.id).length;
    const told = events.filter((e) => e.type === 'transaction.archive_invalid' && e.key.startsWith(`${t.id}:`)).length;
    // A late completion terminated between a refusal and telling of it: that refusal goes untold.
    const untold = lateTerminations(observation, t.id);
    if (told > refused || told < refused - untold)
      found('events', `${t.id}: ${refused} archive(s) refused, ${told} transaction.archive_invalid event(s)`);
    const lateArchived = t.status === 'completed' && model.archives.some((a) => a.transactionId === t.id) && result?.status !== 'completed';
    const lateEvents = events.filter((e) => e.key === `${t.id}:transaction.completed_late`).length;
    // Terminated after its archive and before its event, with no completion after to start it again: no event.
    const mayBeUntold = lateEvents === 0 && lateLeftTerminated(observation, t.id);
    if (lateArchived && lateEvents !== 1 && !mayBeUntold)
      found('events', `${t.id} was archived late, with ${lateEvents} transaction.completed_late event(s)`);
    if (!lateArchived && lateEvents > 0) found('events', `transaction.completed_late for ${t.id}, which was not archived late`);
  }
  for (const [i, result] of results.entries()) {
    if (!result || !parts[i]!.setup.callback) continue;
    const key = `${result.transactionId ?? result.referenceId}:transaction.${result.status}`;
    if (!byKey.has(key)) found('events', `transaction ${i + 1} ended ${result.status}, but the log holds no ${key}`);
  }
}
