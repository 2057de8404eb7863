/**
 * Where the deadline corrections sent to one transaction left its signing deadline.
 *
 * The deadline check (explore/checks.ts) reads it from the runs' histories, which are exact: each correction the
 * workflow applied completed its update there, in the order applied, with the deadline it set (or, applied as the
 * run continued as new, is in the audit the next run starts from). The drive to the end
 * (explore/driver.ts) cannot read histories at every turn, so it reads the answers: the last answer's deadline, and
 * the deadlines asked for by corrections whose answer never came after it (lost to a restart, or still on its way),
 * any of which may be in force. It waits for the latest, which only ever lengthens the drive.
 */
import proto from '@temporalio/proto';
import type { CorrectionRecord } from '../src/definitions/corrections.js';
import { correctTransactionUpdate } from '../src/definitions/transaction.js';
import { decoded } from './approval-checks.js';
import type { MessageOutcome, RecordedHistory } from './observation.js';

const { EventType } = proto.temporal.api.enums.v1;

/**
 * The deadline (ms since the epoch) the last correction the workflow applied set, in `chain`'s runs, if one did. A run
 * continued as new starts from the audit of corrections its predecessor handed on: a correction applied in the task
 * that continued the run may have left no update events there (the test server drops them with a refused completion,
 * explore/sticky-queues.ts TEST_SERVER_CLOSED_RUN), but the audit the next run was started with has it.
 */
export function appliedDeadline(chain: readonly RecordedHistory[]): number | undefined {
  let applied: number | undefined;
  const corrections = new Set<string>();
  const at = (to: string | undefined) => {
    const parsed = Date.parse(to ?? '');
    if (Number.isFinite(parsed)) applied = parsed;
  };
  for (const { history } of chain) {
    const carried = decoded(history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[1]) as
      { corrections?: CorrectionRecord[] } | undefined;
    const handedOn = carried?.corrections?.filter((c) => c.kind === 'deadline').at(-1);
    if (handedOn) at(handedOn.deadline?.to);
    for (const e of history.events ?? []) {
      const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
      if (accepted?.input?.name === correctTransactionUpdate.name && accepted.meta?.updateId) corrections.add(accepted.meta.updateId);
      const completed =
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
          ? e.workflowExecutionUpdateCompletedEventAttributes
          : undefined;
      if (!completed?.meta?.updateId || !corrections.has(completed.meta.updateId)) continue;
      at((decoded(completed.outcome?.success?.payloads?.[0]) as { deadline?: { to?: string } } | undefined)?.deadline?.to);
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
