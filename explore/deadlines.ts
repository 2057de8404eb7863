/**
 * Where the deadline corrections sent to one transaction left its signing deadline.
 *
 * The deadline check (explore/checks.ts) reads it from the runs' histories, which are exact: each correction the
 * workflow applied completed its update there, in the order applied, with the deadline it set. The drive to the end
 * (explore/driver.ts) cannot read histories at every turn, so it reads the answers: the last answer's deadline, and
 * the deadlines asked for by corrections whose answer never came after it (lost to a restart, or still on its way),
 * any of which may be in force. It waits for the latest, which only ever lengthens the drive.
 */
import proto from '@temporalio/proto';
import { correctTransactionUpdate } from '../src/definitions/transaction.js';
import { decoded } from './approval-checks.js';
import type { MessageOutcome, RecordedHistory } from './observation.js';

const { EventType } = proto.temporal.api.enums.v1;

/** The deadline (ms since the epoch) the last correction the workflow applied set, in `chain`'s runs, if one did. */
export function appliedDeadline(chain: readonly RecordedHistory[]): number | undefined {
  let applied: number | undefined;
  const corrections = new Set<string>();
  for (const { history } of chain) {
    for (const e of history.events ?? []) {
      const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
      if (accepted?.input?.name === correctTransactionUpdate.name && accepted.meta?.updateId) corrections.add(accepted.meta.updateId);
      const completed =
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
          ? e.workflowExecutionUpdateCompletedEventAttributes
          : undefined;
      if (!completed?.meta?.updateId || !corrections.has(completed.meta.updateId)) continue;
      const answer = decoded(completed.outcome?.success?.payloads?.[0]) as { deadline?: { to?: string } } | undefined;
      const to = Date.parse(answer?.deadline?.to ?? '');
      if (Number.isFinite(to)) applied = to;
    }
  }
  return applied;
}

export interface AnsweredDeadline {
  /** The deadline the last answered correction set (ms since the epoch), if one was answered. */
  answered?: number;
  /** Deadlines asked for, after the last answer, by corrections whose answer never came: any may be in force. */
  uncertain: number[];
}

/** The deadline as the answers to the corrections of transaction `part` say, for the drive. */
export function answeredDeadline(messages: readonly MessageOutcome[], part: number): AnsweredDeadline {
  const result: AnsweredDeadline = { uncertain: [] };
  for (const m of messages) {
    if ((m.part ?? 0) !== part || m.kind !== 'correct' || m.asked !== 'deadline') continue;
    if (m.outcome === 'ok') {
      const to = Date.parse((m.value as { deadline?: { to?: string } } | undefined)?.deadline?.to ?? '');
      if (Number.isFinite(to)) {
        result.answered = to;
        result.uncertain = [];
      }
    } else if (m.outcome === 'pending' || m.outcome === 'error') {
      const asked = Date.parse(m.deadline ?? '');
      if (Number.isFinite(asked)) result.uncertain.push(asked);
    }
  }
  return result;
}
