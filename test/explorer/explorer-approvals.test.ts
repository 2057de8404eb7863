// The explorer's approvals (explore/schedule.ts `addApprovals`, explore/approval-checks.ts), without a server: the
// inputs it draws are valid, a seed without approvers is the schedule it was before, and the `approvals` check
// catches what it is there for, on histories made up to show it: a send before the quorum, a rejection the outcome
// ignores, an expiry with the quorum met, a query that lost an answer.
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { checkApprovalQuery, checkApprovals } from '../../explore/approval-checks.js';
import { DEFAULT_APPROVAL_SHARE } from '../../explore/explore.js';
import { transactionInput } from '../../explore/input.js';
import type { MessageOutcome, Observation, PartRecord, RecordedHistory } from '../../explore/observation.js';
import { ProviderModel, type ModelTransaction } from '../../explore/provider-model.js';
import { generateSchedule, type GeneratorFeatures, type ScheduleSetup } from '../../explore/schedule.js';
import type { ApprovalAnswer } from '../../src/definitions/approvals.js';
import type { EsignTransactionResult, EsignTransactionStatus } from '../../src/definitions/transaction.js';
import { EsignTransactionInput } from '../../src/transaction/input.js';

const FEATURES: GeneratorFeatures = { maxHistoryEvents: true, badZips: true, restarts: true, reuse: 0.12, bulk: 0.08, operations: 1 };
const participantId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

describe('approval schedules', () => {
  it('draw valid inputs, with approvers in about a quarter of the transactions, and leave the other seeds as they were', () => {
    let named = 0;
    let transactions = 0;
    for (let seed = 1; seed <= 1500; seed++) {
      const schedule = generateSchedule(seed, { ...FEATURES, approvals: DEFAULT_APPROVAL_SHARE });
      const setups = [schedule.setup, ...(schedule.next ?? []).map((n) => n.setup)];
      for (const setup of schedule.bulk ? [] : setups) {
        transactions++;
        const input = transactionInput(
          { ...schedule, setup },
          'ref-1',
          Array.from({ length: setup.participants }, (_, i) => participantId(i)),
        );
        const parsed = EsignTransactionInput.safeParse(input);
        expect(parsed.success, `seed ${seed}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
        if (setup.approval) named++;
      }
      const steps = [schedule.steps, ...(schedule.next ?? []).map((n) => n.steps)].flat();
      if (!setups.some((s) => s.approval) && !steps.some((s) => s.kind === 'approve' || s.kind === 'reject'))
        expect(schedule, `seed ${seed}`).toEqual(generateSchedule(seed, FEATURES));
    }
    expect(named / transactions).toBeGreaterThan(0.18);
    expect(named / transactions).toBeLessThan(0.32);
  });
});

// ------------------------------------------------------------ made-up runs
const { EventType } = proto.temporal.api.enums.v1;
const SETUP: ScheduleSetup = {
  participants: 1,
  status: 'esign_pending',
  signingDeadlineMs: 3_600_000,
  reconcileIntervalMs: 600_000,
  reconcileMaxIntervalMs: 600_000,
  callback: false,
  signingUrlWithStart: false,
  approval: { approvers: 3, quorum: 2, deadlineMs: 1_800_000 },
};
const STARTED = Date.parse('2030-01-01T00:00:00Z');

/** A history of workflow tasks, each with the answers it recorded and whether it scheduled a send. */
function history(tasks: { answers?: ApprovalAnswer[]; send?: boolean }[]): RecordedHistory {
  const events: proto.temporal.api.history.v1.IHistoryEvent[] = [];
  // (Event ids are Longs in the proto's type; the check reads them with Number().)
  const add = (e: proto.temporal.api.history.v1.IHistoryEvent) =>
    events.push({ ...e, eventId: events.length + 1 } as unknown as proto.temporal.api.history.v1.IHistoryEvent);
  for (const task of tasks) {
    add({ eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED });
    for (const answer of task.answers ?? [])
      add({
        eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
        workflowExecutionUpdateCompletedEventAttributes: {
          outcome: { success: { payloads: [defaultPayloadConverter.toPayload(answer)] } },
        },
      });
    if (task.send)
      add({
        eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        activityTaskScheduledEventAttributes: {
          activityType: { name: 'updateTransaction' },
          input: { payloads: [defaultPayloadConverter.toPayload({ transactionId: 't-1', request: { status: 'esign_pending' } })] },
        },
      });
  }
  return { workflowId: 'esign-x', runId: 'run-1', history: { events } };
}

const answer = (approver: number, decision: 'approved' | 'rejected', approvals: number, at = STARTED + 60_000): ApprovalAnswer => ({
  approverId: `approver-${approver}`,
  decision,
  at: new Date(at).toISOString(),
  transactionId: 't-1',
  approvals,
  quorum: 2,
  outcome: decision === 'rejected' ? 'rejected' : approvals >= 2 ? 'sending' : 'pending',
});
const asked = (a: ApprovalAnswer, answerOrder: number): MessageOutcome => ({
  step: `${a.decision === 'approved' ? 'approve' : 'reject'}@+60s`,
  kind: a.decision === 'approved' ? 'approve' : 'reject',
  approverId: a.approverId,
  outcome: 'ok',
  value: a,
  answerOrder,
});

function judged(options: {
  chain: RecordedHistory;
  messages: MessageOutcome[];
  trail: ModelTransaction['trail'];
  result: Partial<EsignTransactionResult>;
  closedAt?: number;
}): string[] {
  const model = new ProviderModel({ uuid: () => 'u' });
  const tx = { id: 't-1', trail: options.trail, everSigned: false, status: options.trail.at(-1)!.status } as ModelTransaction;
  const observation = { messages: options.messages, model } as unknown as Observation;
  const part: PartRecord = {
    setup: SETUP,
    end: { kind: 'stalled', where: '' },
    atEnd: [],
    participantIds: [],
    startedAt: STARTED,
    ...(options.closedAt ? { closedAt: options.closedAt } : {}),
    histories: [],
  };
  const result = { referenceId: 'ref-1', transactionId: 't-1', esignId: 'e-1', ...options.result } as EsignTransactionResult;
  const findings: string[] = [];
  checkApprovals(observation, part, 0, result, [tx], [options.chain], (_, detail) => findings.push(detail));
  return findings;
}

const DRAFT = { status: 'draft', by: 'create' } as const;
const SENT = { status: 'esign_pending', by: 'replace to esign_pending' } as const;

describe('the approvals check', () => {
  it('passes a transaction sent in the task that recorded its quorum', () => {
    const [a, b] = [answer(1, 'approved', 1), answer(2, 'approved', 2)];
    const findings = judged({
      chain: history([{ answers: [a] }, { answers: [b], send: true }]),
      messages: [asked(a, 1), asked(b, 2)],
      trail: [DRAFT, SENT, { status: 'completed', by: 'signers' }],
      result: { status: 'completed' },
    });
    expect(findings).toEqual([]);
  });

  it('finds a send scheduled before the quorum was recorded', () => {
    const [a, b] = [answer(1, 'approved', 1), answer(2, 'approved', 2)];
    const findings = judged({
      chain: history([{ answers: [a], send: true }, { answers: [b] }]),
      messages: [asked(a, 1), asked(b, 2)],
      trail: [DRAFT, SENT, { status: 'completed', by: 'signers' }],
      result: { status: 'completed' },
    });
    expect(findings).toEqual([expect.stringContaining('with 1 of 2 approvals recorded')]);
  });

  it('finds a rejection the outcome ignores, and an answer taken after it', () => {
    const [no, yes] = [answer(1, 'rejected', 0), answer(2, 'approved', 1)];
    const findings = judged({
      chain: history([{ answers: [no] }, { answers: [yes] }]),
      messages: [asked(no, 1), asked(yes, 2)],
      trail: [DRAFT],
      result: { status: 'expired', endedBy: 'deadline', reason: 'approval deadline passed with 1 of 2 approvals' },
      closedAt: STARTED + 1_800_000,
    });
    expect(findings).toEqual([
      expect.stringContaining("approver-2's approval was taken after approver-1's rejection"),
      expect.stringContaining('approver-1 rejected it, but it ended expired by deadline'),
      expect.stringContaining('though an approver rejected it'),
    ]);
  });

  it('finds an expiry by the approval deadline with the quorum met, and a quorum never sent', () => {
    const [a, b] = [answer(1, 'approved', 1), answer(3, 'approved', 2)];
    const findings = judged({
      chain: history([{ answers: [a, b] }]),
      messages: [asked(a, 1), asked(b, 2)],
      trail: [DRAFT],
      result: { status: 'expired', endedBy: 'deadline', reason: 'approval deadline passed with 2 of 2 approvals' },
      closedAt: STARTED + 1_800_000,
    });
    expect(findings).toEqual([expect.stringContaining('though its quorum (2) approved it'), expect.stringContaining('never sent')]);
  });

  it('finds a status query that does not show an answer back before it was asked', () => {
    const a = answer(1, 'approved', 1);
    const query: MessageOutcome = {
      step: 'query@+61s',
      kind: 'query',
      outcome: 'ok',
      answersBefore: 1,
      value: {
        phase: 'awaiting_approval',
        transactionId: 't-1',
        approval: {
          state: 'pending',
          quorum: 2,
          deadline: new Date(STARTED + 1_800_000).toISOString(),
          approvers: [{ id: 'approver-1' }, { id: 'approver-2' }, { id: 'approver-3' }],
        },
      } satisfies Partial<EsignTransactionStatus>,
    };
    const observation = { messages: [asked(a, 1), query] } as unknown as Observation;
    const part = { setup: SETUP, startedAt: STARTED } as PartRecord;
    const findings: string[] = [];
    checkApprovalQuery(observation, part, 0, query, (_, detail) => findings.push(detail));
    expect(findings).toEqual([expect.stringContaining('does not show approver-1 approved')]);
  });
});
