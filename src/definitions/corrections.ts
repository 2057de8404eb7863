/**
 * The `correctTransaction` update's names and answers, zod-free: the workflow,
 * clients and the CLI import them (the schema is src/transaction/corrections.ts).
 */
import type { Participant, Tag } from '../esign/schemas.js';

export const CORRECTION_KINDS = ['reassign', 'contact', 'addSigner', 'removeSigner', 'deadline', 'resend'] as const;
export type CorrectionKind = (typeof CORRECTION_KINDS)[number];

/** Who asks and why, on every correction. */
interface Asked {
  /** Who asks, as the caller's system knows them (an operator's login, a service): recorded, never shown to signers. */
  by: string;
  reason?: string | undefined;
}
/** The person who takes an unsigned participant's place: their role, authentication and tags stay. */
export interface NewPerson {
  id?: string | undefined;
  firstName: string;
  middleName?: string | undefined;
  lastName: string;
  email: string;
  phone?: string | undefined;
}
/** A tag of an added signer, on one of the transaction's documents (`document`: its position, from 0). */
export type AddedTag = Omit<Tag, 'signerId' | 'customData'> & { document: number; customData?: Record<string, unknown> };

/** One correction (the schema, src/transaction/corrections.ts, checks it for clients). */
export type TransactionCorrection = Asked &
  (
    | { kind: 'reassign'; participantId: string; to: NewPerson }
    | { kind: 'contact'; participantId: string; email?: string | undefined; phone?: string | undefined; newId?: string | undefined }
    | { kind: 'addSigner'; participant: Omit<Participant, 'id'> & { id?: string | undefined }; tags: AddedTag[] }
    | { kind: 'removeSigner'; participantId: string }
    | { kind: 'deadline'; deadline: string }
    | { kind: 'resend'; participantId: string }
  );

/** What a correction did, as the update answers it, the integrator's `transaction.corrected` event says it, and the audit keeps it. */
export interface CorrectionRecord {
  kind: CorrectionKind;
  by: string;
  reason?: string;
  /** When the provider took it (or, for a deadline, the workflow). */
  at: string;
  /** The participant it took out (removed, or replaced by `added`), and the one it put in. */
  removed?: { id: string; name: string };
  added?: { id: string; name: string };
  /** Resent to this participant: a fresh signing URL in the answer. */
  resentTo?: { id: string; name: string };
  deadline?: { from: string; to: string };
}

export interface CorrectionResult extends CorrectionRecord {
  transactionId: string;
  /** A `resend`'s fresh signing URL (single-use and short-lived: hand it to the signer now). */
  url?: string;
}

/** Corrections one transaction takes at most: its audit keeps every one (start a new transaction past that). */
export const MAX_CORRECTIONS = 100;
