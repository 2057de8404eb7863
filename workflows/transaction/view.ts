/** What the `status` query answers: the transaction as operators and integrators see it (no e-mails, no secrets). */
import type { EsignPhase, EsignTransactionStatus } from '../../src/definitions/transaction.js';
import type { ApprovalRecord, ApprovalStatus } from '../../src/definitions/approvals.js';
import type { CorrectionRecord } from '../../src/definitions/corrections.js';
import { workflowInfo } from '@temporalio/workflow';
import { EsignBatchId } from '../../src/definitions/search-attributes.js';
import type { SigningTransaction } from './machine.js';

/** The `status` query. */
export function statusOf(tx: SigningTransaction, rawReferenceId: unknown, approval?: ApprovalStatus): EsignTransactionStatus {
  return {
    phase: tx.phase,
    summary: tx.currentDetails(),
    referenceId: tx.input?.referenceId ?? (typeof rawReferenceId === 'string' ? rawReferenceId : ''),
    transactionId: tx.created?.transactionId ?? null,
    esignId: tx.created?.esignId ?? null,
    participants: tx.participants.map((p) => {
      const state = tx.progress?.states?.find((s) => s.id === p.id);
      return {
        id: p.id,
        name: `${p.firstName} ${p.lastName}`,
        ...(state ? { status: state.status, ...(state.at ? { at: state.at } : {}) } : {}),
      };
    }),
    providerStatus: tx.providerStatus,
    deadline: tx.deadlineAt ? new Date(tx.deadlineAt).toISOString() : null,
    lastReconciledAt: tx.lastReconciledAt,
    notificationsAccepted: tx.accepted,
    notificationsRejected: tx.rejected,
    result: tx.result,
    ...(tx.archiveProblem !== undefined && tx.phase === 'archive_invalid' ? { archiveProblem: tx.archiveProblem } : {}),
    ...(approval ? { approval } : {}),
  };
}

/**
 * What the archive's manifest keeps beside the ZIP: the corrections, the approvers' answers, the retention asked, and
 * the bulk send it belongs to (a legal hold on the batch keeps it).
 */
export function keptWith(tx: SigningTransaction): {
  corrections?: CorrectionRecord[];
  approvals?: ApprovalRecord[];
  retention?: string | number;
  batchId?: string;
} {
  const batchId = workflowInfo().typedSearchAttributes.get(EsignBatchId);
  return {
    ...(batchId ? { batchId } : {}),
    ...(tx.input?.retention !== undefined ? { retention: tx.input.retention } : {}),
    ...(tx.corrections.length > 0 ? { corrections: tx.corrections } : {}),
    ...(tx.approval?.answers.length ? { approvals: tx.approval.answers } : {}),
  };
}

/** The main loop's wait, as the Web UI shows it (its timer's summary), to the minute of `untilIso` (UTC). */
export function waitSummary(phase: EsignPhase, untilIso: string): string {
  const until = untilIso.slice(0, 16).replace('T', ' ');
  if (phase === 'draft') return `Wait for the draft to be sent until ${until} UTC`;
  if (phase === 'awaiting_approval') return `Wait for approval until ${until} UTC`;
  if (phase === 'overdue') return `Overdue: wait for the provider's end (next check ${until} UTC)`;
  return `Wait for signatures until ${until} UTC`;
}
