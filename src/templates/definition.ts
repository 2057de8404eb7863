/**
 * What a template is, as zod schemas: the definition a user writes (documents as local PDF paths) and the one the
 * store keeps (documents as their SHA-256), which differ only in how a document is named. Tags name a role, never
 * a participant; text tags may name a merge field. docs/templates.md describes the format.
 */
import { z } from 'zod';
import { AuthenticationType, EmailSubject, NotifyParticipants, Tag, TwoFactorContact, type TagType } from '../esign/schemas.js';
import { DurationInput, EsignTransactionInput } from '../transaction/input.js';
import { textProblem } from '../util/text.js';

/** A template's name: part of its ref (`NDA@3`) and of storage keys, so nothing a path or a ref could misread. */
export const TEMPLATE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/**
 * Role and field names are CSV columns and `--role Name=…` / `--value name=…` keys side by side, so they share
 * one namespace without `=`, commas or spaces, and leave `referenceId` to bulk send's optional column.
 */
const ROLE_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;
const RESERVED_NAMES = new Set(['referenceId']);
export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Text tags are the ones a merge value can fill (the sandbox shows and stamps their `customData.text`). */
export const TEXT_TAG_TYPES: readonly TagType[] = ['TEXTANNOT', 'FREEFORMTEXTTAGTEMPLATEANNOTATION'];
/** A merge value longer than this is refused unless its field says otherwise: it has to fit in a tag's box. */
export const DEFAULT_MAX_VALUE_LENGTH = 500;

export const TemplateRole = z
  .object({
    name: z.string().regex(ROLE_NAME, 'must start with a letter and hold only letters, digits and . _ - (at most 64)'),
    description: z.string().max(500).optional(),
    /** The participant's defaults; a request may give others for one person. */
    authenticationType: AuthenticationType.optional(),
    twoFactorContact: TwoFactorContact.optional(),
  })
  .strict();
export type TemplateRole = z.output<typeof TemplateRole>;

export const TemplateField = z
  .object({
    name: z.string().regex(FIELD_NAME, 'must start with a letter or _ and hold only letters, digits and . _ - (at most 64)'),
    label: z.string().max(200).optional(),
    description: z.string().max(500).optional(),
    /** A required field needs a value or a default; an optional one left empty is typed in by the signer instead. */
    required: z.boolean().default(true),
    default: z.string().optional(),
    maxLength: z.number().int().min(1).max(5000).optional(),
    /** A regular expression the whole value must match, e.g. `[0-9]{4}-[0-9]{2}-[0-9]{2}`. */
    pattern: z.string().min(1).max(500).optional(),
  })
  .strict();
export type TemplateField = z.output<typeof TemplateField>;

export const TemplateTag = Tag.omit({ signerId: true, customData: true })
  .extend({
    role: z.string().min(1),
    /** A merge field whose value is prefilled into this (text) tag. */
    field: z.string().min(1).optional(),
    customData: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type TemplateTag = z.output<typeof TemplateTag>;

export const TemplateDefaults = z
  .object({
    title: z.string().max(255).optional(),
    personalizedMessage: z.string().optional(),
    emailSubject: EmailSubject.optional(),
    reminders: EsignTransactionInput.shape.reminders,
    signingDeadline: DurationInput.optional(),
    /** Approvers every transaction from it needs before it is sent (docs/workflow.md, "Approvals"). */
    approval: EsignTransactionInput.shape.approval,
    /** How long each transaction's archive is kept (docs/records.md). */
    retention: DurationInput.optional(),
    notifyParticipants: NotifyParticipants.optional(),
    signingOrder: z.boolean().optional(),
  })
  .strict();

const documentFields = {
  title: z.string().min(1).max(255),
  description: z.string().optional(),
  tags: z.array(TemplateTag).max(500),
};
/** A document as written: a PDF file, relative to the definition's folder. */
const DocumentByPath = z.object({ ...documentFields, path: z.string().min(1) }).strict();
/** A document as stored: the SHA-256 of its bytes, which the store keeps once whatever uses them. */
const DocumentByDigest = z.object({ ...documentFields, sha256: z.string().regex(SHA256_HEX, 'must be a lowercase hex SHA-256') }).strict();

/** A value a field accepts (its default included): one line, within its length, matching its pattern. */
export function valueProblem(field: TemplateField, value: string): string | undefined {
  const max = field.maxLength ?? DEFAULT_MAX_VALUE_LENGTH;
  const unsafe = textProblem(value, 'one');
  if (unsafe) return unsafe;
  if (value.length > max) return `is ${value.length} characters long, over the field's ${max}`;
  if (field.pattern !== undefined && !new RegExp(`^(?:${field.pattern})$`, 'u').test(value)) {
    return `does not match the field's pattern ${field.pattern}`;
  }
  return undefined;
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

type Checked = {
  roles: TemplateRole[];
  fields: TemplateField[];
  documents: { tags: TemplateTag[] }[];
};

/** The rules that span parts of a definition: names unique and known, every role signs, every field is used. */
function crossCheck(def: Checked, ctx: z.RefinementCtx): void {
  const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  const roles = new Set<string>();
  def.roles.forEach((r, i) => {
    if (roles.has(r.name)) issue(['roles', i, 'name'], `role "${r.name}" is defined twice`);
    if (RESERVED_NAMES.has(r.name)) issue(['roles', i, 'name'], `"${r.name}" is reserved (bulk send's reference column)`);
    roles.add(r.name);
  });
  const fields = new Map<string, TemplateField>();
  def.fields.forEach((f, i) => {
    if (fields.has(f.name)) issue(['fields', i, 'name'], `field "${f.name}" is defined twice`);
    if (roles.has(f.name))
      issue(['fields', i, 'name'], `"${f.name}" is both a role and a field: CSV columns and --value need distinct names`);
    if (RESERVED_NAMES.has(f.name)) issue(['fields', i, 'name'], `"${f.name}" is reserved (bulk send's reference column)`);
    if (f.pattern !== undefined && !compiles(f.pattern)) issue(['fields', i, 'pattern'], 'is not a valid regular expression');
    else if (f.default !== undefined) {
      const problem = valueProblem(f, f.default);
      if (problem) issue(['fields', i, 'default'], `the default ${problem}`);
    }
    fields.set(f.name, f);
  });
  const signing = new Set<string>();
  const used = new Set<string>();
  def.documents.forEach((d, di) =>
    d.tags.forEach((t, ti) => {
      const at = ['documents', di, 'tags', ti];
      if (!roles.has(t.role)) issue([...at, 'role'], `"${t.role}" is not a role of this template (roles: ${[...roles].join(', ')})`);
      signing.add(t.role);
      if (t.field === undefined) return;
      used.add(t.field);
      if (!fields.has(t.field)) issue([...at, 'field'], `"${t.field}" is not a field of this template`);
      if (!TEXT_TAG_TYPES.includes(t.type)) issue([...at, 'field'], `only text tags (${TEXT_TAG_TYPES.join(', ')}) take a merge field`);
      if (t.customData && 'text' in t.customData) issue([...at, 'customData', 'text'], 'a tag with a field takes its text from the field');
    }),
  );
  def.roles.forEach((r, i) => {
    if (!signing.has(r.name)) issue(['roles', i], `role "${r.name}" has no tag: a participant would have nothing to sign`);
  });
  def.fields.forEach((f, i) => {
    if (!used.has(f.name)) issue(['fields', i], `field "${f.name}" is used by no tag: its value would go nowhere`);
  });
}

function definitionSchema<D extends typeof DocumentByPath | typeof DocumentByDigest>(document: D) {
  return z
    .object({
      name: z.string().regex(TEMPLATE_NAME, 'must be letters, digits and . _ - (at most 100), starting with a letter or digit'),
      description: z.string().max(2000).optional(),
      /** In signing order: a transaction's participants are the roles in this order (enforced with `signingOrder`). */
      roles: z.array(TemplateRole).min(1, 'at least one role is required').max(50),
      fields: z.array(TemplateField).max(100).default([]),
      documents: z.array(document).min(1, 'at least one document is required').max(50),
      defaults: TemplateDefaults.default({}),
    })
    .strict()
    .superRefine(crossCheck);
}

/** The definition a user writes; `documents[].path` is read relative to the definition's folder at create time. */
export const TemplateDefinition = definitionSchema(DocumentByPath);
export type TemplateDefinition = z.input<typeof TemplateDefinition>;

/** The definition a version holds: each document's path replaced by its SHA-256, defaults applied. */
export const StoredDefinition = definitionSchema(DocumentByDigest);
export type StoredDefinition = z.output<typeof StoredDefinition>;

export const StoredTemplateSchema = z
  .object({
    ref: z.string(),
    name: z.string().regex(TEMPLATE_NAME),
    version: z.number().int().positive(),
    digest: z.string().regex(SHA256_HEX),
    createdAt: z.iso.datetime(),
    definition: StoredDefinition,
  })
  .strict();
