/**
 * What must hold of a transaction whose input names approvers (explore/schedule.ts `addApprovals`), on top of the
 * checks every transaction gets (explore/checks.ts), as the `approvals` check:
 *
 * - never sent unapproved: created a draft, and every provider write the workflow asked with `esign_pending` (the
 *   send, a replace, a correction) was scheduled once its history held the quorum's approvals and no rejection (in the
 *   same workflow task at the earliest); the provider saw no send the history does not hold. So a rejected transaction
 *   never reaches `esign_pending`;
 * - nothing before it was sent: no signing URL issued, no participant signed, before the provider had it `esign_pending`;
 * - the answers taken: each from an approver it names, once, before the deadline, none after the quorum or a rejection,
 *   each counting the approvals taken; every answer the driver saw taken is in the history, and the other way round;
 * - the outcome agrees with the answers: `rejected` only after a rejection, naming its approver, and a rejection ends it
 *   `rejected` unless a cancel or the provider ended it first; `expired` by the approval deadline only at that deadline
 *   and with its quorum unmet (the reason counting the approvals taken); a quorum met sends it, unless a cancel or the
 *   provider ended it first, the provider refused the send (it then waits as a draft), or the loop came to it only
 *   past the signing deadline (it then ends `expired`, never sent);
 * - the status query's `approval`: the input's quorum, deadline and approvers; every answer back before it was asked,
 *   no decision not taken; its state the decisions' (`rejected`, `approved`; else `pending` while it awaits them, `expired` once
 *   it expired, `ended` once it ended otherwise),
 *   and `approved` once the transaction was sent.
 *
 * A transaction that names no approvers takes no answer (each is refused) and never ends `rejected`.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { ApprovalAnswer } from '../src/definitions/approvals.js';
import type { EsignTransactionResult, EsignTransactionStatus } from '../src/definitions/transaction.js';
import { approverId } from './input.js';
import type { MessageOutcome, Observation, PartRecord, RecordedHistory } from './observation.js';
import type { ModelTransaction } from './provider-model.js';

type Found = (check: 'approvals', detail: string) => void;

const { EventType } = proto.temporal.api.enums.v1;
/** What the explorer's provider model records for the workflow's own sends (explore/activities.ts `modelClient`). */
const WORKFLOW_SEND = 'replace to esign_pending';
/** The reason of an expiry by the approval deadline (workflows/transaction/approving.ts). */
const APPROVAL_DEADLINE_PASSED = 'approval deadline passed';
const SIGNING_DEADLINE_PASSED = 'signing deadline passed before the approved transaction was sent';
/** The workflow's clock and the server's may differ by a task's duration. */
const CLOCK_SLACK_MS = 1_000;

/** An answer as the transaction's history holds it: in which run, and after how many of its workflow tasks. */
interface RecordedAnswer {
  answer: ApprovalAnswer;
  run: number;
  task: number;
}

/** A provider write with `esign_pending` the workflow scheduled, and whether it failed (a final refusal). */
interface RecordedSend {
  run: number;
  task: number;
  eventId: number;
  failed: boolean;
}

/** The answers and the sends of one transaction's chain of runs, in order. */
export function approvalHistory(chain: readonly RecordedHistory[]): { answers: RecordedAnswer[]; sends: RecordedSend[] } {
  const answers: RecordedAnswer[] = [];
  const sends: RecordedSend[] = [];
  for (const [run, h] of chain.entries()) {
    let task = 0;
    const scheduled = new Map<number, RecordedSend>();
    for (const e of h.history.events ?? []) {
      switch (e.eventType) {
        case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
          task++;
          break;
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: {
          const answer = decoded(e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success?.payloads?.[0]);
          if (isAnswer(answer)) answers.push({ answer, run, task });
          break;
        }
        case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
          const attributes = e.activityTaskScheduledEventAttributes;
          if (attributes?.activityType?.name !== 'updateTransaction') break;
          const input = decoded(attributes.input?.payloads?.[0]) as { request?: { status?: string } } | undefined;
          if (input?.request?.status !== 'esign_pending') break;
          const send = { run, task, eventId: Number(e.eventId), failed: false };
          scheduled.set(send.eventId, send);
          sends.push(send);
          break;
        }
        case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: {
          const send = scheduled.get(Number(e.activityTaskFailedEventAttributes?.scheduledEventId));
          if (send) send.failed = true;
          break;
        }
      }
    }
  }
  return { answers, sends };
}

/** A payload's value, or undefined when it cannot be read (an encoded one, say). */
export function decoded(payload: proto.temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
}

/** An `approve` or `reject` update's answer (no other update answers with a decision). */
function isAnswer(value: unknown): value is ApprovalAnswer {
  const a = value as Partial<ApprovalAnswer> | undefined;
  return (a?.decision === 'approved' || a?.decision === 'rejected') && typeof a.approverId === 'string' && typeof a.quorum === 'number';
}

/** Whether `a` was recorded no later than the workflow task of `b` (the loop acts in the task its handler answered in). */
const notAfter = (a: { run: number; task: number }, b: { run: number; task: number }) =>
  a.run < b.run || (a.run === b.run && a.task <= b.task);

/** The approvals check of one transaction of a schedule (`chain`: its runs' histories, in order; empty if unknown). */
export function checkApprovals(
  observation: Observation,
  part: PartRecord,
  index: number,
  result: EsignTransactionResult | undefined,
  ours: readonly ModelTransaction[],
  chain: readonly RecordedHistory[],
  found: Found,
): void {
  const messages = observation.messages.filter((m) => (m.part ?? 0) === index);
  const asked = messages.filter((m) => m.kind === 'approve' || m.kind === 'reject');
  const approval = part.setup.approval;
  if (!approval) {
    for (const m of asked) if (m.outcome === 'ok') found('approvals', `${m.step} was taken, though the transaction names no approvers`);
    if (result?.status === 'rejected') found('approvals', 'ended rejected, though the transaction names no approvers');
    return;
  }
  const tx = ours[0];
  const quorum = approval.quorum ?? approval.approvers;
  const deadline = part.startedAt + approval.deadlineMs;
  const { answers, sends } = approvalHistory(chain);
  const known = chain.length > 0;
  // Without the histories (not collected), the answers the driver saw taken stand in for them.
  const taken: ApprovalAnswer[] = known
    ? answers.map((a) => a.answer)
    : asked.filter((m) => m.outcome === 'ok').map((m) => m.value as ApprovalAnswer);
  const approvals = taken.filter((a) => a.decision === 'approved');
  const rejection = taken.find((a) => a.decision === 'rejected');
  const quorumMet = approvals.length >= quorum;
  const trail = tx?.trail ?? [];
  const sent = trail.some((s) => s.by === WORKFLOW_SEND);
  const trailText = trail.map((s) => `${s.status} by ${s.by}`).join(', ');

  // ------------------------------------------------------ never sent unapproved
  if (tx && (trail[0]?.status !== 'draft' || trail[0]?.by !== 'create'))
    found('approvals', `created ${trail[0]?.status ?? '?'} (by ${trail[0]?.by ?? '?'}), not as a draft for its approvers`);
  for (const send of sends) {
    const before = answers.filter((a) => notAfter(a, send));
    const yes = before.filter((a) => a.answer.decision === 'approved').length;
    const no = before.find((a) => a.answer.decision === 'rejected');
    if (yes < quorum || no)
      found(
        'approvals',
        `the workflow asked the provider to send it (esign_pending, event ${send.eventId} of run ${send.run + 1}) with ${yes} of ${quorum} approvals recorded` +
          (no ? ` and ${no.answer.approverId}'s rejection` : ''),
      );
  }
  if (known && sent && sends.length === 0)
    found('approvals', `the provider's transaction was sent by the workflow (${trailText}), but its history asked no send`);
  if (rejection && sent) found('approvals', `rejected by ${rejection.approverId}, yet the provider's transaction was sent (${trailText})`);

  // --------------------------------------------------- nothing before it was sent
  for (const url of observation.model.signingUrls.filter((u) => ours.some((t) => t.id === u.transactionId) && !u.sentBefore))
    found('approvals', `a signing URL was issued for ${url.transactionId} while it was ${url.status}, never sent`);
  for (const t of ours)
    if (t.everSigned && !t.trail.some((s) => s.status === 'esign_pending'))
      found('approvals', `a participant signed ${t.id}, which was never sent`);

  // ------------------------------------------------------------- the answers
  const named = new Set(Array.from({ length: approval.approvers }, (_, i) => approverId(i)));
  const seen = new Set<string>();
  let count = 0;
  let over: string | undefined;
  for (const a of taken) {
    const what = `${a.approverId}'s ${a.decision === 'approved' ? 'approval' : 'rejection'}`;
    if (!named.has(a.approverId)) found('approvals', `${what} was taken, though the transaction does not name them`);
    if (seen.has(a.approverId)) found('approvals', `${what} was taken, though they had answered already`);
    if (over) found('approvals', `${what} was taken after ${over}`);
    if (Date.parse(a.at) >= deadline + CLOCK_SLACK_MS)
      found('approvals', `${what} was taken at ${a.at}, after the approval deadline ${new Date(deadline).toISOString()}`);
    seen.add(a.approverId);
    if (a.decision === 'approved') count++;
    if (a.approvals !== count || a.quorum !== quorum)
      found('approvals', `${what} answered ${a.approvals} of ${a.quorum} approvals; ${count} of ${quorum} were taken`);
    if (a.decision === 'rejected') over = `${a.approverId}'s rejection`;
    else if (count >= quorum) over = 'the quorum was met';
  }
  if (known) {
    // The driver's view and the history's agree: an answer it saw taken was recorded, and one recorded was asked.
    for (const m of asked.filter((x) => x.outcome === 'ok')) {
      const decision = m.kind === 'approve' ? 'approved' : 'rejected';
      if (!taken.some((a) => a.approverId === m.approverId && a.decision === decision))
        found('approvals', `${m.step} (${m.approverId}) was answered as taken, but the history holds no such answer`);
    }
    for (const a of taken)
      if (!asked.some((m) => m.approverId === a.approverId && m.kind === (a.decision === 'approved' ? 'approve' : 'reject')))
        found('approvals', `the history holds ${a.approverId}'s ${a.decision} answer, which nobody gave`);
  }

  // ------------------------------------------------------------- the outcome
  if (!result) return;
  const ended = `ended ${result.status}${result.endedBy ? ` by ${result.endedBy}` : ''}`;
  const byCancel = result.status === 'cancelled' && result.endedBy === 'request';
  const byProvider = result.endedBy === 'provider';
  if (result.status === 'rejected') {
    if (!rejection) found('approvals', `${ended}, but no approver's rejection was taken`);
    else if (result.rejectedBy?.approverId !== rejection.approverId)
      found('approvals', `${ended} naming ${result.rejectedBy?.approverId ?? 'nobody'}, but ${rejection.approverId} rejected it`);
    if (result.endedBy !== 'approver') found('approvals', `${ended}, not by the approver`);
  } else if (rejection && !byCancel && !byProvider)
    found('approvals', `${rejection.approverId} rejected it, but it ${ended} (${result.reason ?? ''})`);
  const byApprovalDeadline = result.status === 'expired' && result.reason?.startsWith(APPROVAL_DEADLINE_PASSED);
  if (byApprovalDeadline) {
    if (quorumMet || rejection)
      found(
        'approvals',
        `${ended} (${result.reason}), though ${rejection ? 'an approver rejected it' : `its quorum (${quorum}) approved it`}`,
      );
    const counted = /with (\d+) of (\d+) approvals/.exec(result.reason ?? '');
    if (!counted || Number(counted[1]) !== approvals.length || Number(counted[2]) !== quorum)
      found('approvals', `${ended} saying "${result.reason}"; ${approvals.length} of ${quorum} approvals were taken`);
    if (part.closedAt !== undefined && part.closedAt < deadline - CLOCK_SLACK_MS)
      found('approvals', `${ended} by the approval deadline ${Math.round((deadline - part.closedAt) / 1000)} s before it`);
  }
  const refused = sends.some((s) => s.failed);
  // The loop came to the quorum only past the signing deadline (a slow step): the draft ends, never sent.
  const tooLate =
    result.status === 'expired' &&
    result.reason?.startsWith(SIGNING_DEADLINE_PASSED) === true &&
    (part.closedAt === undefined || part.closedAt >= part.startedAt + part.setup.signingDeadlineMs - CLOCK_SLACK_MS);
  if (quorumMet && !rejection && !sent && !byCancel && !byProvider && !refused && !tooLate)
    found('approvals', `its quorum (${quorum}) approved it, but it was never sent and ${ended} (${result.reason ?? ''}; ${trailText})`);
}

/** The status query's `approval` agrees with the answers taken before it was asked and with its phase. */
export function checkApprovalQuery(
  observation: Observation,
  part: PartRecord,
  index: number,
  m: MessageOutcome,
  found: (check: 'approvals', detail: string) => void,
): void {
  const answer = m.value as EsignTransactionStatus;
  const approval = part.setup.approval;
  const status = answer.approval;
  if (!approval) {
    if (status) found('approvals', `${m.step} answered an approval (${status.state}), though the transaction names no approvers`);
    return;
  }
  // Not created yet (or cancelled before it was): nobody has been asked.
  if (!status) {
    if (answer.transactionId !== null) found('approvals', `${m.step} answered no approval in phase ${answer.phase}`);
    return;
  }
  const quorum = approval.quorum ?? approval.approvers;
  const deadline = part.startedAt + approval.deadlineMs;
  const ids = Array.from({ length: approval.approvers }, (_, i) => approverId(i));
  if (status.quorum !== quorum) found('approvals', `${m.step} answered a quorum of ${status.quorum}, not ${quorum}`);
  if (Math.abs(Date.parse(status.deadline) - deadline) > 5_000)
    found('approvals', `${m.step} answered the approval deadline ${status.deadline}, not ${new Date(deadline).toISOString()}`);
  if (status.approvers.map((a) => a.id).join(',') !== ids.join(','))
    found('approvals', `${m.step} answered approvers ${status.approvers.map((a) => a.id).join(', ')}, not ${ids.join(', ')}`);
  const answers = observation.messages.filter((x) => (x.part ?? 0) === index && (x.kind === 'approve' || x.kind === 'reject'));
  for (const a of status.approvers) {
    if (!a.decision) continue;
    const kind = a.decision === 'approved' ? 'approve' : 'reject';
    // Asked and not refused (its answer may have been lost, or not come back yet).
    if (!answers.some((x) => x.approverId === a.id && x.kind === kind && x.outcome !== 'failed'))
      found('approvals', `${m.step} answered ${a.id} ${a.decision}, which no answer of theirs was taken as`);
  }
  for (const x of answers) {
    if (x.outcome !== 'ok' || (x.answerOrder ?? Infinity) > (m.answersBefore ?? -1)) continue;
    const decision = x.kind === 'approve' ? 'approved' : 'rejected';
    if (status.approvers.find((a) => a.id === x.approverId)?.decision !== decision)
      found('approvals', `${m.step} does not show ${x.approverId} ${decision}, though ${x.step} was taken before it was asked`);
  }
  const yes = status.approvers.filter((a) => a.decision === 'approved').length;
  const state = status.approvers.some((a) => a.decision === 'rejected')
    ? 'rejected'
    : yes >= quorum
      ? 'approved'
      : answer.phase === 'awaiting_approval'
        ? 'pending'
        : answer.phase === 'expired'
          ? 'expired'
          : 'ended';
  if (status.state !== state)
    found('approvals', `${m.step} answered the approval ${status.state} in phase ${answer.phase}; its answers make it ${state}`);
  // Phases only a sent transaction reaches: an unapproved draft ends at its deadline, never withdrawn into overdue.
  const sentPhases = ['awaiting_signatures', 'overdue', 'archiving', 'archive_invalid', 'completed', 'declined'];
  if (sentPhases.includes(answer.phase) && status.state !== 'approved')
    found('approvals', `${m.step} answered phase ${answer.phase} (sent), but the approval ${status.state}`);
  if (answer.phase === 'rejected' && status.state !== 'rejected')
    found('approvals', `${m.step} answered phase rejected, but the approval ${status.state}`);
}
