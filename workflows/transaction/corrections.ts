/**
 * What a correction of a transaction in flight may be, and what it does to the
 * provider's record (pure): the `correctTransaction` update's validator and
 * change. Its work is ./correcting.ts. docs/decisions/corrections-in-flight.md
 * says why each change of person or address gives the participant a new id.
 */
import { CORRECTION_KINDS, MAX_CORRECTIONS, type TransactionCorrection } from '../../src/definitions/corrections.js';
import type { CreateTransactionRequest, Participant } from '../../src/esign/schemas.js';
import { pick } from '../requests.js';
import type { SigningTransaction } from './machine.js';

/** The furthest a corrected deadline may be: a transaction lives a year at most. */
const MAX_DEADLINE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;
const MAX_PARTICIPANTS = 50;

/** Why the transaction cannot take this correction now, or undefined. Checks the shape too: another SDK may send it. */
export function refuseCorrection(tx: SigningTransaction, raw: unknown, now: number): string | undefined {
  const c = (raw ?? {}) as Partial<Record<string, unknown>>;
  if (!(CORRECTION_KINDS as readonly unknown[]).includes(c.kind)) return `kind must be one of ${CORRECTION_KINDS.join(', ')}`;
  if (typeof c.by !== 'string' || c.by.trim() === '' || c.by.length > 200) return 'by must name who asks (1 to 200 characters)';
  if (c.reason !== undefined && (typeof c.reason !== 'string' || c.reason.length > 500)) return 'reason must be at most 500 characters';
  if (tx.isFinishing()) return `transaction is ${tx.cancel ? 'being cancelled' : tx.phase}; it can no longer be corrected`;
  if (tx.phase === 'overdue') return 'transaction is overdue: its deadline passed';
  if (tx.withdrawing) return 'transaction is being withdrawn (its deadline passed)';
  // Passed, and the loop not yet at it: a correction must not rescue what is due to be withdrawn.
  if (tx.deadlineAt > 0 && now >= tx.deadlineAt) return 'transaction is past its deadline: it is being withdrawn';
  if (tx.phase === 'awaiting_approval') return 'transaction awaits approval: what its approvers approve cannot change';
  if (!tx.created || (tx.phase !== 'draft' && tx.phase !== 'awaiting_signatures'))
    return `transaction is ${tx.phase}: it can be corrected once it is created`;
  if (tx.corrections.length >= MAX_CORRECTIONS) return `transaction has taken ${MAX_CORRECTIONS} corrections: start a new one`;
  const known = (id: unknown) => typeof id === 'string' && tx.participants.some((p) => p.id === id);
  // An id once taken out never comes back: links issued for it would open again, on someone else's place.
  const retired = (id: unknown) => tx.corrections.some((r) => r.removed?.id === id);
  const taken = (id: unknown) => id !== undefined && (typeof id !== 'string' || id.trim() === '' || known(id) || retired(id));
  switch (c.kind as TransactionCorrection['kind']) {
    case 'deadline': {
      // With its offset: a time without one is the worker's local time, which a replay elsewhere reads otherwise.
      const at = typeof c.deadline === 'string' && ISO_WITH_OFFSET.test(c.deadline) ? Date.parse(c.deadline) : NaN;
      if (!Number.isFinite(at)) return 'deadline must be an ISO 8601 date-time with its offset (Z or ±hh:mm)';
      if (at <= now) return 'deadline must be in the future';
      if (at > now + MAX_DEADLINE_AHEAD_MS) return 'deadline must be within a year';
      return undefined;
    }
    case 'addSigner': {
      const p = (c.participant ?? {}) as Partial<Participant>;
      if (!person(p)) return 'participant needs firstName, lastName and email';
      if (taken(p.id)) return `participant id ${String(p.id)} is already taken`;
      if (tx.participants.length >= MAX_PARTICIPANTS) return `a transaction has at most ${MAX_PARTICIPANTS} participants`;
      const tags = c.tags;
      if (!Array.isArray(tags) || tags.length === 0) return 'an added signer needs at least one tag';
      if (tags.length > MAX_ADDED_TAGS) return `an added signer has at most ${MAX_ADDED_TAGS} tags`;
      const documents = tx.request?.documents.length ?? 0;
      const inside = (t: unknown) => {
        const at = (t as { document?: unknown } | null)?.document;
        return typeof at === 'number' && Number.isInteger(at) && at >= 0 && at < documents;
      };
      if (!tags.every(inside)) return `each tag's document must be one of the transaction's ${documents} (from 0)`;
      return undefined;
    }
    default: {
      const id = c.participantId;
      if (!known(id)) return `unknown participant: ${String(id)}`;
      const status = tx.progress?.statusOf(id as string);
      if (status === 'signed' || status === 'declined') return `participant ${String(id)} has ${status}: what they did cannot change`;
      if (c.kind === 'resend' && tx.phase === 'draft') return 'transaction is a draft: send it first';
      if (c.kind === 'reassign') {
        const to = (c.to ?? {}) as Partial<Participant>;
        if (!person(to)) return 'to needs firstName, lastName and email';
        if (taken(to.id)) return `participant id ${String(to.id)} is already taken`;
        const role = tx.participants.find((p) => p.id === id)!;
        // A secret or a phone of the person replaced must not reach the new one's signing (their codes, their password).
        if (role.authenticationType === 'personal-password')
          return `participant ${String(id)} signs with a personal password, which cannot pass to another person: remove them and add the new signer`;
        if (role.twoFactorContact === 'sms' && (typeof to.phone !== 'string' || to.phone.trim() === ''))
          return `to.phone is needed: participant ${String(id)} gets one-time codes by SMS`;
      }
      if (c.kind === 'contact') {
        if (c.email === undefined && c.phone === undefined) return 'give email, phone or both';
        if (c.email !== undefined && !(typeof c.email === 'string' && EMAIL.test(c.email))) return 'email must be an e-mail address';
        if (c.phone !== undefined && !(typeof c.phone === 'string' && c.phone.trim() !== '')) return 'phone must not be empty';
        if (taken(c.newId)) return `participant id ${String(c.newId)} is already taken`;
      }
      if (c.kind === 'removeSigner') {
        const stillToSign = tx.participants.filter((p) => tx.progress?.statusOf(p.id) !== 'signed');
        if (stillToSign.length <= 1) return `participant ${String(id)} is the last one still to sign: cancel the transaction instead`;
      }
      return undefined;
    }
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
/** Tags one added signer may bring: what a signer needs, never so many that the state grows past its bound. */
const MAX_ADDED_TAGS = 20;
const person = (p: Partial<Participant>) =>
  [p.firstName, p.lastName, p.email].every((v) => typeof v === 'string' && v.trim() !== '') && EMAIL.test(p.email!);

/** The provider's record with the correction applied, and who it took out and put in. Pure. */
export function corrected(
  request: CreateTransactionRequest,
  c: Extract<TransactionCorrection, { kind: 'reassign' | 'contact' | 'addSigner' | 'removeSigner' }>,
  newId: string,
): { request: CreateTransactionRequest; removed?: Participant; added?: Participant } {
  const old = 'participantId' in c ? request.participants.find((p) => p.id === c.participantId)! : undefined;
  const retag = (from: string, to: string | undefined) =>
    request.documents.map((d) => ({
      ...d,
      tags: d.tags.flatMap((t) => (t.signerId !== from ? [t] : to === undefined ? [] : [{ ...t, signerId: to }])),
    }));
  const swap = (next: Participant) => ({
    request: { ...request, participants: request.participants.map((p) => (p === old ? next : p)), documents: retag(old!.id, next.id) },
    removed: old!,
    added: next,
  });
  switch (c.kind) {
    case 'reassign': {
      // The role stays (order, authentication, checks); nothing of the person replaced does (address, phone, ids).
      const { authenticationType, twoFactorContact } = old!;
      // Only the person's fields: another SDK could send role fields (`authenticationType: 'none'`) in `to`.
      const { firstName, lastName, email } = c.to;
      const person = { firstName, lastName, email, ...pick(c.to, ['middleName', 'phone']) };
      return swap({ ...pick(old!, ROLE), authenticationType, twoFactorContact, ...person, id: newId });
    }
    case 'contact':
      return swap({ ...old!, ...pick(c, ['email', 'phone']), id: newId });
    case 'removeSigner':
      return {
        request: { ...request, participants: request.participants.filter((p) => p !== old), documents: retag(old!.id, undefined) },
        removed: old!,
      };
    case 'addSigner': {
      const added: Participant = { ...c.participant, id: newId };
      const documents = request.documents.map((d, i) => ({
        ...d,
        tags: [
          ...d.tags,
          ...c.tags
            .filter((t) => t.document === i)
            .map(({ document: _, ...t }) => ({ ...t, customData: t.customData ?? {}, signerId: newId })),
        ],
      }));
      return { request: { ...request, participants: [...request.participants, added], documents }, added };
    }
  }
}

/** What a participant's place in the transaction is, apart from the person in it. */
const ROLE = [
  'order',
  'authenticationType',
  'twoFactorContact',
  'kbaRequired',
  'credAnalysisRequired',
  'type',
  'primary',
] as const satisfies readonly (keyof Participant)[];
