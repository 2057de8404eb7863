/**
 * What a caller gives to fill a template: a person per role, merge values, and what it may add or change (the
 * overrides). Shapes only; `instantiate` checks them against the template.
 */
import { z } from 'zod';
import { EmailSubject, IframeStyle, NotifyParticipants, Participant, RequestStatus } from '../esign/schemas.js';
import { DurationInput, EsignTransactionInput } from '../transaction/input.js';

/** A role's person as `{ name: 'Ada Lovelace', email }`: the last word of the name is the last name. */
export const PersonByName = z.object({ name: z.string().trim().min(1), email: z.email() }).strict();

/** A role's person as the provider's participant fields; authentication given here replaces the role's default. */
export const PersonByParts = Participant.pick({
  firstName: true,
  middleName: true,
  lastName: true,
  email: true,
  phone: true,
  externalId: true,
  personalPassword: true,
  personalPasswordQuestion: true,
  inviteEmailSubject: true,
  authenticationType: true,
  twoFactorContact: true,
  address1: true,
  address2: true,
  city: true,
  state: true,
  zip: true,
  country: true,
})
  .partial({ authenticationType: true, twoFactorContact: true })
  .strict();

export type RoleValue = z.input<typeof PersonByName> | z.input<typeof PersonByParts>;

/** What a caller may set on a transaction started from a template; the template's defaults fill the rest. */
export const TemplateOverrides = z
  .object({
    title: z.string().max(255).optional(),
    status: RequestStatus.optional(),
    callbackUrl: EsignTransactionInput.shape.callbackUrl,
    signingDeadline: DurationInput.optional(),
    reconcileInterval: DurationInput.optional(),
    reconcileMaxInterval: DurationInput.optional(),
    reminders: EsignTransactionInput.shape.reminders,
    /** Approvers every transaction from it needs before it is sent (docs/workflow.md, "Approvals"). */
    approval: EsignTransactionInput.shape.approval,
    /** How long each transaction's archive is kept (docs/records.md). */
    retention: DurationInput.optional(),
    personalizedMessage: z.string().optional(),
    emailSubject: EmailSubject.optional(),
    notifyParticipants: NotifyParticipants.optional(),
    signingOrder: z.boolean().optional(),
    archivePrefix: EsignTransactionInput.shape.archivePrefix,
    iframeStyle: IframeStyle.optional(),
  })
  .strict();
export type TemplateOverrides = z.input<typeof TemplateOverrides>;
export const OVERRIDE_KEYS = Object.keys(TemplateOverrides.shape);

export interface TemplateRequest {
  /** The transaction's reference (its workflow id): no personal data. */
  referenceId: string;
  /** One person per role of the template, by role name. */
  roles: Record<string, RoleValue>;
  /** Merge values by field name; an empty string counts as no value (the field's default applies). */
  values?: Record<string, string>;
  overrides?: TemplateOverrides;
}

/** "Ada Lovelace <ada@example.com>" (the CLI's `--role`, a bulk CSV cell) → the person; throws saying what is expected. */
export function parseRoleValue(text: string): { firstName: string; lastName: string; email: string } {
  const match = /^\s*(.+?)\s*<([^<>\s]+)>\s*$/.exec(text);
  if (!match) throw new Error(`expected "First Last <email>", got "${text}"`);
  const email = match[2]!;
  if (!z.email().safeParse(email).success) throw new Error(`"${email}" is not an e-mail address`);
  const names = splitName(match[1]!);
  if (!names) throw new Error(`"${match[1]}" is one name: the provider needs a first and a last name ("First Last <email>")`);
  return { ...names, email };
}

/** The last word is the last name, the others the first name; undefined for a single word. */
export function splitName(name: string): { firstName: string; lastName: string } | undefined {
  const words = name.trim().split(/\s+/);
  if (words.length < 2) return undefined;
  return { firstName: words.slice(0, -1).join(' '), lastName: words.at(-1)! };
}
