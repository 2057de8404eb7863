import { describe, expect, it } from 'vitest';
import type { CreateTransactionRequest, Participant } from '../../src/esign/schemas.js';
import { TransactionCorrection } from '../../src/transaction/corrections.js';
import { corrected, refuseCorrection } from '../../workflows/transaction/corrections.js';
import type { ContinuedTransaction } from '../../workflows/transaction/continued.js';
import { SigningTransaction } from '../../workflows/transaction/machine.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const A = '11111111-1111-4111-8111-111111111111';
const B = '22222222-2222-4222-8222-222222222222';
const C = '33333333-3333-4333-8333-333333333333';
const person = (id: string, firstName: string, extra: Partial<Participant> = {}): Participant => ({
  id, firstName, lastName: 'T', email: `${firstName.toLowerCase()}@example.com`,
  authenticationType: 'two-factor-authentication', twoFactorContact: 'email', kbaRequired: true, ...extra,
});
const tag = (signerId: string, x: number) => ({ type: 'SIGNATURETEMPLATE' as const, x, y: 1, width: 10, height: 5, page: 0, signerId, customData: {} });
const ada = person(A, 'Ada');
const alan = person(B, 'Alan', { inviteEmailSubject: 'Alan Turing: your contract' });
const request: CreateTransactionRequest = {
  status: 'esign_pending', referenceId: 'r',
  participants: [ada, alan],
  documents: [{ id: 'd1', title: 'One', StoragePath: 'a/one.pdf', tags: [tag(A, 1), tag(B, 2)] }],
};
const tx = (o: Partial<ContinuedTransaction> = {}) =>
  new SigningTransaction({
    participants: request.participants, request, created: { transactionId: 't', esignId: 'e' }, phase: 'awaiting_signatures',
    deadlineAt: NOW + 1e8, providerStatus: 'esign_pending', lastReconciledAt: null, accepted: 0, rejected: 0, seen: [],
    progress: null, announced: [], reminders: { sent: 0, nextAt: null }, pollMs: 1000, runs: 1, ...o,
  });

describe('attacks', () => {
  it('an id removed earlier is accepted again (old links revive)', () => {
    // Alan was reassigned to C (Alan's id B left the transaction); now C is reassigned back "to" id B.
    const afterFirst = corrected(request, { kind: 'reassign', by: 'x', participantId: B, to: { firstName: 'Carl', lastName: 'T', email: 'c@example.com' } }, C);
    const t = tx({ request: afterFirst.request, participants: afterFirst.request.participants });
    const c = { kind: 'reassign', by: 'x', participantId: C, to: { id: B, firstName: 'Dora', lastName: 'T', email: 'd@example.com' } };
    expect(TransactionCorrection.safeParse(c).success).toBe(true);
    expect(refuseCorrection(t, c, NOW)).toBeUndefined();
    // removeSigner then addSigner with the removed id: accepted too
    const removed = corrected(request, { kind: 'removeSigner', by: 'x', participantId: B }, 'unused');
    const t2 = tx({ request: removed.request, participants: removed.request.participants });
    const add = { kind: 'addSigner', by: 'x', participant: { id: B, firstName: 'Eve', lastName: 'T', email: 'eve@example.com', authenticationType: 'none', twoFactorContact: 'email' }, tags: [{ document: 0, type: 'SIGNATURETEMPLATE', x: 5, y: 1, width: 10, height: 5, page: 0 }] };
    expect(TransactionCorrection.safeParse(add).success).toBe(true);
    expect(refuseCorrection(t2, add, NOW)).toBeUndefined();
  });

  it('raw reassign may override the role (authentication, KBA, order) and keeps a personal invite subject', () => {
    const c = { kind: 'reassign', by: 'x', participantId: B, to: { firstName: 'Mal', lastName: 'T', email: 'm@example.com', authenticationType: 'none', kbaRequired: false, order: 99 } };
    expect(refuseCorrection(tx(), c, NOW)).toBeUndefined();
    const out = corrected(request, c as never, C);
    console.log('reassigned participant', JSON.stringify(out.added));
    expect(out.added!.authenticationType).toBe('none');
    expect(out.added!.kbaRequired).toBe(false);
    expect(out.added!.inviteEmailSubject).toBe('Alan Turing: your contract');
  });

  it('raw addSigner with a negative document index: accepted, the tag vanishes', () => {
    const c = { kind: 'addSigner', by: 'x', participant: { firstName: 'Eve', lastName: 'T', email: 'eve@example.com', authenticationType: 'none', twoFactorContact: 'email' }, tags: [{ document: -1, type: 'SIGNATURETEMPLATE', x: 5, y: 1, width: 10, height: 5, page: 0 }] };
    expect(refuseCorrection(tx(), c, NOW)).toBeUndefined();
    const out = corrected(request, c as never, C);
    expect(out.request.documents.flatMap((d) => d.tags).filter((t) => t.signerId === C)).toHaveLength(0);
  });

  it('raw contact: no format check on email/phone', () => {
    for (const email of ['not-an-email', '', null, 42]) expect(refuseCorrection(tx(), { kind: 'contact', by: 'x', participantId: B, email }, NOW)).toBeUndefined();
    expect(refuseCorrection(tx(), { kind: 'contact', by: 'x', participantId: B, phone: { evil: 1 } }, NOW)).toBeUndefined();
    const out = corrected(request, { kind: 'contact', by: 'x', participantId: B, email: null } as never, C);
    console.log('contact email null ->', JSON.stringify(out.added));
  });

  it('deadline: validator accepts strings zod refuses (TZ-dependent local times, natural language)', () => {
    for (const d of ['2026-12-01T10:00:00', 'Dec 1 2026', '2026-12-01', '2026-12-01 10:00'])
      expect([d, refuseCorrection(tx(), { kind: 'deadline', by: 'x', deadline: d }, NOW)]).toEqual([d, undefined]);
    expect(TransactionCorrection.safeParse({ kind: 'deadline', by: 'x', deadline: '2026-12-01T10:00:00' }).success).toBe(false);
  });

  it('validator/zod: whitespace-only names pass zod, refused by workflow; tags count unbounded', () => {
    const c = { kind: 'reassign', by: 'x', participantId: B, to: { firstName: ' ', lastName: 'T', email: 'm@example.com' } };
    expect(TransactionCorrection.safeParse(c).success).toBe(true);
    expect(refuseCorrection(tx(), c, NOW)).toMatch(/to needs/);
    const many = { kind: 'addSigner', by: 'x', participant: { id: C, firstName: 'Eve', lastName: 'T', email: 'eve@example.com', authenticationType: 'none', twoFactorContact: 'email' }, tags: Array.from({ length: 20000 }, () => ({ document: 0, type: 'SIGNATURETEMPLATE', x: 5, y: 1, width: 10, height: 5, page: 0 })) };
    expect(TransactionCorrection.safeParse(many).success).toBe(true);
    expect(refuseCorrection(tx(), many, NOW)).toBeUndefined();
    console.log('bytes of 20000 tags', JSON.stringify(many).length);
  });

  it('removeSigner with a stale view: accepted though the other has signed at the provider', () => {
    // progress null: the workflow has not heard that Ada signed
    expect(refuseCorrection(tx(), { kind: 'removeSigner', by: 'x', participantId: B }, NOW)).toBeUndefined();
  });
});
