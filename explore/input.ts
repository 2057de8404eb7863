import type { EsignTransactionInput } from '../src/transaction/input.js';
import { CALLBACK_URL } from './activities.js';
import type { ApprovalSetup, Schedule } from './schedule.js';

/** The transaction's input for a schedule: two small documents, the schedule's participants, timings and options. */
export function transactionInput(schedule: Schedule, referenceId: string, participantIds: readonly string[]): EsignTransactionInput {
  const { setup } = schedule;
  const people = ['Ada Lovelace', 'Alan Turing', 'Grace Hopper'];
  return {
    referenceId,
    documents: [
      {
        title: 'Contract',
        source: { storagePath: `caller-uploaded/${referenceId}.pdf` },
        tags: participantIds.map((_, i) => ({
          type: 'SIGNATURETEMPLATE' as const,
          x: 72,
          y: 120 + 40 * i,
          width: 200,
          height: 30,
          page: 0,
          signerIndex: i,
        })),
      },
    ],
    participants: participantIds.map((id, i) => {
      const [firstName, lastName] = people[i]!.split(' ') as [string, string];
      return {
        id,
        email: `${firstName.toLowerCase()}@example.com`,
        firstName,
        lastName,
        authenticationType: 'none',
        twoFactorContact: 'email',
      };
    }),
    status: setup.status,
    signingDeadline: setup.signingDeadlineMs,
    reconcileInterval: setup.reconcileIntervalMs,
    reconcileMaxInterval: setup.reconcileMaxIntervalMs,
    ...(setup.callback ? { callbackUrl: CALLBACK_URL } : {}),
    ...(setup.reminders
      ? { reminders: { firstAfter: setup.reminders.firstAfterMs, every: setup.reminders.everyMs, maxCount: setup.reminders.maxCount } }
      : {}),
    ...(setup.archivePrefix ? { archivePrefix: setup.archivePrefix } : {}),
    ...(setup.maxHistoryEvents ? ({ maxHistoryEvents: setup.maxHistoryEvents } as Record<string, unknown>) : {}),
    ...(setup.approval ? { approval: approvalInput(setup.approval) } : {}),
  };
}

/** The id of the approver at `index` (explore/schedule.ts names approvers by position; past their count, a stranger). */
export const approverId = (index: number): string => `approver-${index + 1}`;

/** The input's `approval` for a schedule's: every other approver named, a person's name the explorer never checks. */
function approvalInput(approval: ApprovalSetup): NonNullable<EsignTransactionInput['approval']> {
  return {
    approvers: Array.from({ length: approval.approvers }, (_, i) => ({
      id: approverId(i),
      ...(i % 2 === 0 ? { name: `Approver ${i + 1}` } : {}),
    })),
    ...(approval.quorum ? { quorum: approval.quorum } : {}),
    deadline: approval.deadlineMs,
    ...(approval.reminders
      ? {
          reminders: {
            firstAfter: approval.reminders.firstAfterMs,
            every: approval.reminders.everyMs,
            maxCount: approval.reminders.maxCount,
          },
        }
      : {}),
  };
}
