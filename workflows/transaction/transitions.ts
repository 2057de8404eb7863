/**
 * The transaction's phases and every move between them, as one table. The
 * state machine (./machine.ts) refuses a move that is not in it, and
 * docs/workflow.md's diagram is generated from it (test/workflows/workflow-diagram.test.ts
 * checks the two agree).
 */
import type { EsignPhase, EsignTransactionResult } from '../../src/definitions/transaction.js';

export interface Transition {
  from: EsignPhase;
  to: EsignPhase;
  /** Why, as the diagram labels it. */
  on: string;
}

const OPEN: readonly EsignPhase[] = ['draft', 'awaiting_approval', 'awaiting_signatures', 'overdue'];
const fromEachOpen = (to: EsignPhase, on: string): Transition[] => OPEN.map((from) => ({ from, to, on }));

export const TRANSITIONS: readonly Transition[] = [
  { from: 'uploading', to: 'creating', on: 'documents uploaded' },
  { from: 'uploading', to: 'cancelled', on: 'cancel (nothing at the provider yet)' },
  { from: 'creating', to: 'draft', on: 'created as a draft' },
  { from: 'creating', to: 'awaiting_signatures', on: 'created and sent' },
  { from: 'creating', to: 'awaiting_approval', on: 'created as a draft, for its approvers' },
  { from: 'awaiting_approval', to: 'awaiting_signatures', on: 'quorum approved, sent' },
  { from: 'awaiting_approval', to: 'draft', on: 'quorum approved, the provider refused to send it' },
  { from: 'awaiting_approval', to: 'rejected', on: 'an approver rejected it' },
  { from: 'awaiting_approval', to: 'expired', on: 'approval or signing deadline' },
  { from: 'awaiting_approval', to: 'cancelled', on: 'cancel, withdrawn' },
  { from: 'draft', to: 'draft', on: 'replaced as a draft' },
  { from: 'draft', to: 'awaiting_signatures', on: 'replaced and sent' },
  { from: 'awaiting_signatures', to: 'awaiting_signatures', on: 'replaced and sent' },
  { from: 'awaiting_signatures', to: 'draft', on: 'replaced as a draft' },
  { from: 'draft', to: 'cancelled', on: 'cancel, withdrawn' },
  { from: 'awaiting_signatures', to: 'cancelled', on: 'cancel, withdrawn' },
  { from: 'draft', to: 'expired', on: 'deadline, withdrawn' },
  { from: 'awaiting_signatures', to: 'expired', on: 'deadline, withdrawn' },
  { from: 'draft', to: 'overdue', on: 'deadline, withdraw refused' },
  { from: 'awaiting_signatures', to: 'overdue', on: 'deadline, withdraw refused (someone signed)' },
  ...fromEachOpen('archiving', 'provider completed it, confirmed'),
  ...fromEachOpen('declined', 'a signer declined'),
  ...fromEachOpen('cancelled', 'provider cancelled it'),
  ...fromEachOpen('expired', 'provider expired it'),
  ...fromEachOpen('deleted', 'provider deleted it'),
  { from: 'archiving', to: 'completed', on: 'ZIP verified and archived' },
  { from: 'archiving', to: 'archive_invalid', on: 'ZIP refused by verification' },
  { from: 'archive_invalid', to: 'archiving', on: 'retryArchive (an operator fixed the cause)' },
];

/** Phases the transaction ends in. */
export const FINAL: readonly EsignPhase[] = ['completed', 'declined', 'rejected', 'expired', 'cancelled', 'deleted'];
/** Phases in which the transaction is still open at the provider and may be followed, replaced or withdrawn. */
export const OPEN_PHASES = OPEN;

export function isAllowed(from: EsignPhase, to: EsignPhase): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to);
}

/** The Mermaid state diagram of the table, as docs/workflow.md shows it. */
export function stateDiagram(): string {
  const lines = ['stateDiagram-v2', '    [*] --> uploading: start (input validated)'];
  for (const t of TRANSITIONS) lines.push(`    ${t.from} --> ${t.to}: ${t.on}`);
  for (const end of FINAL) lines.push(`    ${end} --> [*]`);
  return lines.join('\n');
}

/** What the provider's state means for the transaction (`SigningTransaction.observe`). */
export type Observation =
  { kind: 'open' } | { kind: 'completed' } | { kind: 'ended'; status: Exclude<EsignTransactionResult['status'], 'completed'> };
