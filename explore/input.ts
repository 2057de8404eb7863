import type { EsignTransactionInput } from '../src/transaction/input.js';
import { CALLBACK_URL } from './activities.js';
import type { Schedule } from './schedule.js';

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
  };
}
