/**
 * Corrections of a transaction in flight (the `correctTransaction` update): the
 * zod schema the client checks before sending, and the types the workflow
 * takes (it checks again, zod-free, in its validator: another SDK may send it).
 *
 * Every change of who a participant is or how they are reached gives them a
 * new participant id: a signing link names its participant, and the provider
 * refuses a link whose participant is no longer in the transaction (spec
 * 4.7), so links already sent to a wrong address stop working. The event and
 * the update's answer say which id took the place of which
 * (docs/decisions/corrections-in-flight.md).
 */
import { z } from 'zod';
import { Participant, Tag, Uuid } from '../esign/schemas.js';
import type { TransactionCorrection as TransactionCorrectionType } from '../definitions/corrections.js';

/** Who asks, as the caller's system knows them (an operator's login, a service): recorded, never shown to signers. */
const By = z.string().trim().min(1).max(200);
const Reason = z.string().trim().max(500).optional();

/** The person who takes an unsigned participant's place (their role, authentication and tags stay). */
export const NewPerson = z
  .object({
    id: Uuid.optional(),
    firstName: z.string().min(1),
    middleName: z.string().optional(),
    lastName: z.string().min(1),
    email: z.email(),
    phone: z.string().optional(),
  })
  .strict();

/** A tag of an added signer, on one of the transaction's documents (by position, from 0). */
export const AddedTag = Tag.omit({ signerId: true, customData: true })
  .extend({ document: z.number().int().nonnegative(), customData: z.record(z.string(), z.unknown()).default({}) })
  .strict();

export const TransactionCorrection = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('reassign'), by: By, reason: Reason, participantId: z.string().min(1), to: NewPerson }).strict(),
  z
    .object({
      kind: z.literal('contact'),
      by: By,
      reason: Reason,
      participantId: z.string().min(1),
      email: z.email().optional(),
      phone: z.string().min(1).optional(),
      /** The id the participant takes (a fresh UUID when omitted). */
      newId: Uuid.optional(),
    })
    .strict()
    .refine((c) => c.email !== undefined || c.phone !== undefined, { message: 'give email, phone or both', path: ['email'] }),
  z
    .object({
      kind: z.literal('addSigner'),
      by: By,
      reason: Reason,
      participant: Participant.extend({ id: Uuid.optional() }),
      tags: z.array(AddedTag).min(1, 'an added signer needs at least one tag').max(20),
    })
    .strict(),
  z.object({ kind: z.literal('removeSigner'), by: By, reason: Reason, participantId: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('deadline'), by: By, reason: Reason, deadline: z.iso.datetime({ offset: true }) }).strict(),
  z.object({ kind: z.literal('resend'), by: By, reason: Reason, participantId: z.string().min(1) }).strict(),
]);
/** What the schema lets through is what the workflow's type describes (a compile-time check). */
export const asCorrection = (c: z.output<typeof TransactionCorrection>): TransactionCorrectionType => c;
