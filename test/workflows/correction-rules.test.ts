// The correctTransaction update's rules, read directly (workflows/transaction/corrections.ts): every refusal says
// why, and each change rebuilds the provider's record with the participant's tags following them.
import { describe, expect, it } from 'vitest';
import type { TransactionCorrection } from '../../src/definitions/corrections.js';
import type { CreateTransactionRequest, Participant } from '../../src/esign/schemas.js';
import { corrected, refuseCorrection } from '../../workflows/transaction/corrections.js';
import type { ContinuedTransaction } from '../../workflows/transaction/continued.js';
import { SigningTransaction } from '../../workflows/transaction/machine.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const person = (id: string, firstName: string): Participant => ({
  id,
  firstName,
  lastName: 'Tester',
  email: `${firstName.toLowerCase()}@example.com`,
  authenticationType: 'two-factor-authentication',
  twoFactorContact: 'sms',
  phone: '+15550001',
});
const ada = person('p-ada', 'Ada');
const alan = person('p-alan', 'Alan');
const tag = (signerId: string, x: number) => ({
  type: 'SIGNATURETEMPLATE' as const,
  x,
  y: 1,
  width: 10,
  height: 5,
  page: 0,
  signerId,
  customData: {},
});
const request: CreateTransactionRequest = {
  status: 'esign_pending',
  referenceId: 'ref-1',
  participants: [ada, alan],
  documents: [
    { id: 'd1', title: 'One', StoragePath: 'a/one.pdf', tags: [tag('p-ada', 1), tag('p-alan', 2)] },
    { id: 'd2', title: 'Two', StoragePath: 'a/two.pdf', tags: [tag('p-alan', 3)] },
  ],
};

function transaction(overrides: Partial<ContinuedTransaction> = {}): SigningTransaction {
  const tx = new SigningTransaction({
    participants: [ada, alan],
    request,
    created: { transactionId: 't-1', esignId: 'e-1' },
    phase: 'awaiting_signatures',
    deadlineAt: NOW + 86_400_000,
    providerStatus: 'esign_pending',
    lastReconciledAt: null,
    accepted: 0,
    rejected: 0,
    seen: [],
    progress: [
      { id: 'p-ada', status: 'signed' },
      { id: 'p-alan', status: 'viewed' },
    ],
    announced: [],
    reminders: { sent: 0, nextAt: null },
    pollMs: 1000,
    runs: 1,
    ...overrides,
  });
  return tx;
}
const by = { by: 'ops:jane' };
const why = (c: unknown, tx = transaction()) => refuseCorrection(tx, c, NOW);

describe('correction refusals', () => {
  it('says why for the shape, the state and each kind', () => {
    expect(why({ kind: 'rename', ...by })).toMatch(/^kind must be one of reassign, contact/);
    expect(why({ kind: 'resend', participantId: 'p-alan' })).toBe('by must name who asks (1 to 200 characters)');
    expect(why({ kind: 'resend', by: 'x'.repeat(201), participantId: 'p-alan' })).toBe('by must name who asks (1 to 200 characters)');
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, transaction({ phase: 'completed' }))).toBe(
      'transaction is completed; it can no longer be corrected',
    );
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, transaction({ phase: 'overdue' }))).toBe(
      'transaction is overdue: its deadline passed',
    );
    const cancelling = transaction();
    cancelling.requestCancel('no');
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, cancelling)).toBe(
      'transaction is being cancelled; it can no longer be corrected',
    );
    const withdrawing = transaction();
    withdrawing.withdrawing = true;
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, withdrawing)).toBe(
      'transaction is being withdrawn (its deadline passed)',
    );
    expect(why({ kind: 'deadline', ...by, deadline: new Date(NOW + 3_600_000).toISOString() }, transaction({ deadlineAt: NOW }))).toBe(
      'transaction is past its deadline: it is being withdrawn',
    );
    const full = transaction();
    full.corrections.push(...Array.from({ length: 100 }, () => ({ kind: 'resend' as const, by: 'x', at: '' })));
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, full)).toBe('transaction has taken 100 corrections: start a new one');

    expect(why({ kind: 'contact', ...by, participantId: 'p-ada', email: 'a@b.example' })).toBe(
      'participant p-ada has signed: what they did cannot change',
    );
    expect(why({ kind: 'removeSigner', ...by, participantId: 'p-nobody' })).toBe('unknown participant: p-nobody');
    expect(why({ kind: 'removeSigner', ...by, participantId: 'p-alan' })).toBe(
      'participant p-alan is the last one still to sign: cancel the transaction instead',
    );
    expect(why({ kind: 'contact', ...by, participantId: 'p-alan' })).toBe('give email, phone or both');
    expect(why({ kind: 'contact', ...by, participantId: 'p-alan', phone: '1', newId: 'p-ada' })).toBe(
      'participant id p-ada is already taken',
    );
    expect(why({ kind: 'reassign', ...by, participantId: 'p-alan', to: { firstName: 'G', lastName: 'H', email: 'nope' } })).toBe(
      'to needs firstName, lastName and email',
    );
    // The person replaced's phone would get the new signer's one-time codes; their password is theirs.
    const newcomer = { firstName: 'Grace', lastName: 'Hopper', email: 'g@example.com' };
    expect(why({ kind: 'reassign', ...by, participantId: 'p-alan', to: newcomer })).toBe(
      'to.phone is needed: participant p-alan gets one-time codes by SMS',
    );
    const withPassword = transaction({
      participants: [ada, { ...alan, authenticationType: 'personal-password', personalPassword: 's3cret' }],
    });
    expect(why({ kind: 'reassign', ...by, participantId: 'p-alan', to: { ...newcomer, phone: '+1555' } }, withPassword)).toMatch(
      /signs with a personal password, which cannot pass to another person/,
    );
    expect(why({ kind: 'resend', ...by, participantId: 'p-alan' }, transaction({ phase: 'draft' }))).toBe(
      'transaction is a draft: send it first',
    );
    expect(why({ kind: 'deadline', ...by, deadline: 'tomorrow' })).toBe(
      'deadline must be an ISO 8601 date-time with its offset (Z or ±hh:mm)',
    );
    expect(why({ kind: 'deadline', ...by, deadline: new Date(NOW - 1).toISOString() })).toBe('deadline must be in the future');
    expect(why({ kind: 'deadline', ...by, deadline: new Date(NOW + 400 * 86_400_000).toISOString() })).toBe(
      'deadline must be within a year',
    );
    const grace = { firstName: 'Grace', lastName: 'Hopper', email: 'g@example.com', authenticationType: 'none', twoFactorContact: 'email' };
    expect(why({ kind: 'addSigner', ...by, participant: grace, tags: [] })).toBe('an added signer needs at least one tag');
    expect(why({ kind: 'addSigner', ...by, participant: grace, tags: [{ document: 2 }] })).toBe(
      "each tag's document must be one of the transaction's 2 (from 0)",
    );
    expect(why({ kind: 'addSigner', ...by, participant: { ...grace, id: 'p-alan' }, tags: [{ document: 0 }] })).toBe(
      'participant id p-alan is already taken',
    );
    // Found by a cold attack: what another SDK can send past the client's schema.
    const retiring = transaction();
    retiring.corrections.push({ kind: 'removeSigner', by: 'x', at: '', removed: { id: 'p-gone', name: 'Gone' } });
    expect(why({ kind: 'contact', ...by, participantId: 'p-alan', phone: '1', newId: 'p-gone' }, retiring)).toBe(
      'participant id p-gone is already taken',
    );
    expect(why({ kind: 'addSigner', ...by, participant: { ...grace, id: 'p-gone' }, tags: [{ document: 0 }] }, retiring)).toBe(
      'participant id p-gone is already taken',
    );
    expect(why({ kind: 'addSigner', ...by, participant: grace, tags: [{ document: -1 }] })).toMatch(/^each tag's document must be/);
    expect(why({ kind: 'addSigner', ...by, participant: grace, tags: Array.from({ length: 21 }, () => ({ document: 0 })) })).toBe(
      'an added signer has at most 20 tags',
    );
    expect(why({ kind: 'deadline', ...by, deadline: '2026-12-01T10:00:00' })).toMatch(/with its offset/);
    expect(why({ kind: 'contact', ...by, participantId: 'p-alan', email: 42 })).toBe('email must be an e-mail address');
    expect(why({ kind: 'contact', ...by, participantId: 'p-alan', phone: '' })).toBe('phone must not be empty');
    // And what it takes.
    expect(why({ kind: 'deadline', ...by, deadline: new Date(NOW + 3_600_000).toISOString() })).toBeUndefined();
    expect(why({ kind: 'addSigner', ...by, participant: grace, tags: [{ document: 1 }] })).toBeUndefined();
  });
});

describe('corrected records', () => {
  const change = (c: TransactionCorrection) => corrected(request, c as Parameters<typeof corrected>[1], 'p-new');

  it('a reassign gives the new person the role, authentication and tags, with a new id', () => {
    const {
      request: next,
      removed,
      added,
    } = change({
      kind: 'reassign',
      ...by,
      participantId: 'p-alan',
      to: { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.com', phone: '+15550002' },
    });
    expect(removed).toBe(alan);
    // Alan's phone, which would get Grace's codes, does not pass to her; the role does.
    expect(added).toEqual({
      id: 'p-new',
      firstName: 'Grace',
      lastName: 'Hopper',
      email: 'grace@example.com',
      phone: '+15550002',
      authenticationType: 'two-factor-authentication',
      twoFactorContact: 'sms',
    });
    expect(next.participants.map((p) => p.id)).toEqual(['p-ada', 'p-new']);
    expect(next.documents.map((d) => d.tags.map((t) => t.signerId))).toEqual([['p-ada', 'p-new'], ['p-new']]);
  });

  it('a reassign takes only the person from `to`, never role fields another SDK slips in', () => {
    const { added } = change({
      kind: 'reassign',
      ...by,
      participantId: 'p-alan',
      to: {
        firstName: 'Eve',
        lastName: 'X',
        email: 'eve@example.com',
        phone: '+1',
        authenticationType: 'none',
        kbaRequired: false,
      } as never,
    });
    expect(added).toMatchObject({ authenticationType: 'two-factor-authentication', twoFactorContact: 'sms' });
    expect(added).not.toHaveProperty('kbaRequired');
  });

  it('a contact change keeps the person, a removal takes their tags, an addition appends its tags', () => {
    const contact = change({ kind: 'contact', ...by, participantId: 'p-alan', email: 'alan.t@example.com' });
    expect(contact.added).toEqual({ ...alan, id: 'p-new', email: 'alan.t@example.com' });
    const removal = change({ kind: 'removeSigner', ...by, participantId: 'p-alan' });
    expect(removal.request.participants).toEqual([ada]);
    expect(removal.request.documents.map((d) => d.tags.length)).toEqual([1, 0]);
    const grace = {
      firstName: 'Grace',
      lastName: 'Hopper',
      email: 'g@example.com',
      authenticationType: 'none' as const,
      twoFactorContact: 'email' as const,
    };
    const addition = change({
      kind: 'addSigner',
      ...by,
      participant: grace,
      tags: [{ document: 1, type: 'DATETEMPLATE', x: 5, y: 5, width: 5, height: 5, page: 0 }],
    });
    expect(addition.request.participants.at(-1)).toEqual({ ...grace, id: 'p-new' });
    expect(addition.request.documents[1]!.tags.at(-1)).toEqual({
      type: 'DATETEMPLATE',
      x: 5,
      y: 5,
      width: 5,
      height: 5,
      page: 0,
      customData: {},
      signerId: 'p-new',
    });
    // Pure: the record it started from is untouched.
    expect(request.participants).toEqual([ada, alan]);
  });
});
