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
 *   completion's event, numbered after it).
 */
import proto from '@temporalio/proto';
import { FailureType } from '../src/failures.js';
import type { Observation } from './observation.js';
import type { Replayer } from './lane.js';
import { QUERY_LOST_IN_RESTART } from './sticky-queues.js';

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
  | 'events';

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

export async function check(observation: Observation, replayer: Replayer | undefined): Promise<Finding[]> {
  const findings: Finding[] = [];
  const found = (check: CheckName, detail: string) => findings.push({ check, detail });
  const { end, atEnd, model, referenceId } = observation;

  // ---------------------------------------------------------------- ended
  if (end.kind === 'not-started') found('ended', `the workflow did not start: ${end.message}`);
  else if (end.kind === 'stalled') found('ended', `the workflow did not end: ${end.where}`);
  else if (end.kind === 'failed') found('ended', `the workflow failed (${end.type ?? 'no type'}): ${end.message}`);

  // ----------------------------------------------- outcome and never-early
  const ours = model.byReference(referenceId);
  if (ours.length > 1) found('created-once', `${ours.length} provider transactions for referenceId ${referenceId}`);
  if (end.kind === 'result') {
    const result = end.result;
    const tx = atEnd.find((t) => t.id === result.transactionId) ?? atEnd[0];
    const status = tx?.status ?? 'none';
    const allowed: Record<string, readonly string[]> = {
      completed: ['completed'],
      declined: ['declined'],
      deleted: ['deleted'],
      // Ended by the caller or the deadline: withdrawn (a draft), or nothing was created yet; the provider may end
      // a draft on its own afterwards. Ended by the provider: its own end.
      cancelled: result.endedBy === 'provider' ? ['cancelled'] : ['draft', 'none', 'cancelled', 'expired', 'deleted'],
      expired: result.endedBy === 'provider' ? ['expired'] : ['draft', 'none', 'cancelled', 'expired', 'deleted'],
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
  }

  // -------------------------------------------------------- archived-once
  for (const t of ours) {
    const commits = model.archives.filter((a) => a.transactionId === t.id);
    if (t.status === 'completed' && commits.length !== 1) {
      found(
        'archived-once',
        `transaction ${t.id} completed at the provider and was archived ${commits.length} times (${commits.map((c) => c.key).join(', ') || 'never'})`,
      );
    }
    if (t.status !== 'completed' && commits.length > 0) found('archived-once', `transaction ${t.id} is ${t.status} but was archived`);
  }

  // ------------------------------------------------------------- messages
  const result = end.kind === 'result' ? end.result : undefined;
  for (const m of observation.messages) {
    const what = `${m.step}`;
    if (m.outcome === 'pending') {
      if (end.kind === 'result') found('messages', `${what} was never answered`);
      continue;
    }
    if (m.kind === 'query' && m.outcome !== 'ok' && !m.message?.includes(QUERY_LOST_IN_RESTART)) {
      // A query answers from the workflow's state, replayed if need be: it never fails on a workflow that exists.
      found('messages', `${what} failed: ${m.type ?? ''} ${m.message ?? ''}`);
      continue;
    }
    if (m.kind === 'cancel' && m.outcome === 'ok' && result && (m.value as { status?: string })?.status !== result.status) {
      found('messages', `${what} returned ${(m.value as { status?: string })?.status}, but the workflow ended ${result.status}`);
    }
    if (m.kind === 'cancel' && m.type === FailureType.TransactionFinished && result && result.status !== 'completed')
      found('messages', `${what} failed with TransactionFinished, but the workflow ended ${result.status}`);
    if (m.kind === 'cancel' && m.type === FailureType.WithdrawRefused) {
      const signed = ours.some((t) => t.everSigned);
      if (!signed) found('messages', `${what} was refused (WithdrawRefused) though nobody had signed: ${m.message ?? ''}`);
    }
    if (m.kind === 'retryArchive' && m.outcome === 'ok' && (m.value as { status?: string })?.status !== 'completed')
      found('messages', `${what} returned ${(m.value as { status?: string })?.status}`);
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

  // --------------------------------------------------------------- replay
  if (replayer) {
    for (const h of observation.histories) {
      const error = await replayer.replay(h.workflowId, h.history);
      if (error) found('replay', `${h.workflowId} (run ${h.runId}) does not replay: ${error}`);
    }
  }

  // ------------------------------------------------------------ late path
  for (const id of observation.stillOpen) found('late-path', `${id} was still running 8 days after the transaction ended`);

  // --------------------------------------------------------------- events
  if (observation.schedule.setup.callback && result) {
    // First deliveries only: a retried attempt repeats an event with its sequence, which the receiver deduplicates.
    const firsts: number[] = [];
    for (const e of model.events.filter((x) => x.via === 'attemptLoggedEvent'))
      if (e.sequence !== undefined && !firsts.includes(e.sequence)) firsts.push(e.sequence);
    const expected = Array.from({ length: firsts.length }, (_, i) => i + 1);
    if (firsts.join(',') !== expected.join(','))
      found('events', `the event log delivered sequences ${firsts.join(', ')}, not 1 to ${firsts.length} in order`);
    // The outcome closes the transaction's own events; only a late completion's may follow it.
    const last = model.events.filter((x) => x.via === 'attemptLoggedEvent' && x.type !== 'transaction.completed_late').at(-1);
    if (last?.type !== `transaction.${result.status}`)
      found('events', `the last event delivered is ${last?.type ?? 'none'}, not transaction.${result.status}`);
  }
  return findings;
}
