/** Rules over stored transactions that more than one part of the provider sandbox applies. */
import type { Participant, TransactionRecord } from '../../../src/esign/schemas.js';
import { SandboxError } from './errors.js';
import type { SandboxStore, TransactionBody, TransactionRow } from './store.js';

/**
 * The record as the API returns it, with each participant's progress
 * (docs/spec-gaps.md, row 33). Signer passwords are never returned.
 */
export function toRecord(store: SandboxStore, t: TransactionRow): TransactionRecord {
  const { participants, ...rest } = t.body;
  const progress = store.participantProgress(t.id);
  return {
    ...stripUndefined(rest),
    id: t.id,
    esignId: t.esignId,
    status: t.status,
    participants: participants.map(({ personalPassword: _secret, ...p }) => {
      const done = progress.get(p.id);
      if (!done) return { ...p, status: 'pending' as const };
      const viewed = done.viewedAt ? { viewedAt: done.viewedAt } : {};
      if (done.status === 'viewed') return { ...p, status: 'viewed' as const, ...viewed };
      return done.status === 'signed'
        ? { ...p, status: 'signed' as const, ...viewed, signedAt: done.at }
        : { ...p, status: 'declined' as const, ...viewed, declinedAt: done.at, ...(done.reason ? { declineReason: done.reason } : {}) };
    }),
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    ...(t.completedAt ? { completedAt: t.completedAt } : {}),
  };
}

/** A transaction of this organization; another organization's is reported as absent, not forbidden. */
export function ownedTransaction(store: SandboxStore, org: string, id: string): TransactionRow {
  const t = store.getTransaction(id);
  if (!t || t.org !== org) throw new SandboxError('not_found', `no transaction ${id}`);
  return t;
}

/** With signing order, the unfinished participant with the lowest `order` (then position) signs next. */
export function nextSigner(body: TransactionBody, finished: Set<string>): Participant | undefined {
  return body.participants
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => !finished.has(p.id))
    .sort((a, b) => (a.p.order ?? a.i) - (b.p.order ?? b.i) || a.i - b.i)[0]?.p;
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
