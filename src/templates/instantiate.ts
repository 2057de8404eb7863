/**
 * A template and a request become a transaction input: roles become participants in the template's order (the
 * signing order), tags by role become tags by `signerIndex`, merge values are prefilled into text tags as
 * `customData.text` (docs/spec-gaps.md row 47). Pure and deterministic, so bulk send's activities can call it per
 * row and a row started again gets the same input: participant ids derive from the referenceId and the role.
 * Everything wrong with a request is reported at once in one TemplateInputError; it never throws anything else.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { ParticipantInput, EsignTransactionInput as TransactionInput } from '../transaction/input.js';
import { EsignTransactionInput, REFERENCE_ID, REFERENCE_ID_RULE } from '../transaction/input.js';
import { formatPath } from '../util/zod-issues.js';
import { valueProblem, type TemplateRole } from './definition.js';
import { TemplateInputError, type TemplateProblem } from './errors.js';
import { OVERRIDE_KEYS, PersonByName, PersonByParts, splitName, TemplateOverrides, type TemplateRequest } from './request.js';
import type { StoredTemplate } from './reader.js';

const quoted = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ') || 'none';

/** A participant id from the reference and the role: the same request always names the same participants. */
export function participantIdFor(referenceId: string, role: string): string {
  const hex = createHash('sha256').update(`esign-template-participant\n${referenceId}\n${role}`).digest('hex');
  // Laid out as an RFC 9562 version 8 (custom) UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function issues(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${formatPath(i.path)}: ${i.message}` : i.message)).join('; ');
}

/** The participant for one role, or the problems with the person given for it. */
function person(
  role: TemplateRole,
  value: unknown,
  referenceId: string,
  problems: TemplateProblem[],
  index: number,
): ParticipantInput | undefined {
  const bad = (message: string) => problems.push({ kind: 'invalid-value', name: role.name, message: `role "${role.name}": ${message}` });
  const byName = typeof value === 'object' && value !== null && 'name' in value;
  const parsed = byName ? PersonByName.safeParse(value) : PersonByParts.safeParse(value);
  if (!parsed.success) return void bad(issues(parsed.error));
  let fields: z.output<typeof PersonByParts>;
  if ('name' in parsed.data) {
    const names = splitName(parsed.data.name);
    if (!names) return void bad(`"${parsed.data.name}" is one name: the provider needs a first and a last name`);
    fields = { ...names, email: parsed.data.email };
  } else fields = parsed.data;
  const participant: ParticipantInput = {
    ...fields,
    id: participantIdFor(referenceId, role.name),
    order: index + 1,
    authenticationType: fields.authenticationType ?? role.authenticationType ?? 'none',
    twoFactorContact: fields.twoFactorContact ?? role.twoFactorContact ?? 'email',
  };
  // What the provider would refuse at creation (docs/spec-gaps.md row 42), refused here with the role's name.
  if (participant.authenticationType === 'personal-password' && !participant.personalPassword) {
    bad('this role signs with a personal password: give personalPassword');
  }
  if (participant.authenticationType === 'two-factor-authentication' && participant.twoFactorContact === 'sms' && !participant.phone) {
    bad('this role gets its one-time code by sms: give phone');
  }
  return participant;
}

/** The value of each field to prefill, by name; a field left without one is typed in by the signer. */
function mergeValues(template: StoredTemplate, given: unknown, problems: TemplateProblem[]): Map<string, string> {
  const fields = template.definition.fields;
  const values = new Map<string, string>();
  if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given))) {
    problems.push({ kind: 'invalid-value', name: 'values', message: 'values must be an object of field name → text' });
    return values;
  }
  const entries = Object.entries((given ?? {}) as Record<string, unknown>);
  for (const [name, value] of entries) {
    if (!fields.some((f) => f.name === name)) {
      problems.push({
        kind: 'unknown-value',
        name,
        message: `"${name}" is not a field of ${template.ref} (its fields: ${quoted(fields.map((f) => f.name))})`,
      });
    } else if (typeof value !== 'string') {
      problems.push({ kind: 'invalid-value', name, message: `value "${name}" must be text` });
    }
  }
  for (const field of fields) {
    const raw = entries.find(([name]) => name === field.name)?.[1];
    const value = typeof raw === 'string' && raw !== '' ? raw : field.default;
    if (value === undefined) {
      if (field.required && raw === undefined) {
        problems.push({
          kind: 'missing-value',
          name: field.name,
          message: `value "${field.name}"${field.label ? ` (${field.label})` : ''} is missing`,
        });
      } else if (field.required && raw === '') {
        problems.push({ kind: 'missing-value', name: field.name, message: `value "${field.name}" is empty, and the field is required` });
      }
      continue;
    }
    const problem = valueProblem(field, value);
    if (problem) problems.push({ kind: 'invalid-value', name: field.name, message: `value "${field.name}" ${problem}` });
    else values.set(field.name, value);
  }
  return values;
}

/** The transaction input a template and a request make; throws TemplateInputError with every problem, and nothing else. */
export function instantiate(template: StoredTemplate, request: TemplateRequest): TransactionInput {
  const problems: TemplateProblem[] = [];
  const req = (typeof request === 'object' && request !== null ? request : {}) as Partial<Record<keyof TemplateRequest, unknown>>;
  const def = template.definition;
  const referenceId = typeof req.referenceId === 'string' ? req.referenceId : '';
  if (!REFERENCE_ID.test(referenceId)) {
    problems.push({
      kind: 'invalid-value',
      name: 'referenceId',
      message: `referenceId ${typeof req.referenceId === 'string' ? `"${referenceId}" ` : ''}${REFERENCE_ID_RULE}`,
    });
  }

  const roles = (typeof req.roles === 'object' && req.roles !== null ? req.roles : {}) as Record<string, unknown>;
  const roleNames = def.roles.map((r) => r.name);
  for (const name of Object.keys(roles)) {
    if (!roleNames.includes(name)) {
      problems.push({
        kind: 'unknown-role',
        name,
        message: `"${name}" is not a role of ${template.ref} (its roles: ${quoted(roleNames)})`,
      });
    }
  }
  const participants = def.roles.map((role, i) => {
    if (!Object.hasOwn(roles, role.name) || roles[role.name] === undefined) {
      problems.push({
        kind: 'missing-role',
        name: role.name,
        message: `role "${role.name}"${role.description ? ` (${role.description})` : ''} has no person: give one`,
      });
      return undefined;
    }
    return person(role, roles[role.name], referenceId, problems, i);
  });

  const values = mergeValues(template, req.values, problems);

  const parsedOverrides = TemplateOverrides.safeParse(req.overrides ?? {});
  if (!parsedOverrides.success) {
    for (const issue of parsedOverrides.error.issues) {
      const unknown = issue.code === 'unrecognized_keys' ? ` (a template start may set: ${OVERRIDE_KEYS.join(', ')})` : '';
      const name = issue.path.length ? `overrides.${formatPath(issue.path)}` : 'overrides';
      problems.push({ kind: 'invalid-value', name, message: `${name}: ${issue.message}${unknown}` });
    }
  }
  const overrides = parsedOverrides.success ? parsedOverrides.data : {};
  const settings = { ...def.defaults, ...overrides };
  if (settings.reminders && !settings.callbackUrl) {
    problems.push({
      kind: 'invalid-value',
      name: 'overrides.callbackUrl',
      message: `${template.ref} sends reminders, which go to a callbackUrl: give overrides.callbackUrl`,
    });
  }
  if (problems.length > 0) throw new TemplateInputError(template.ref, problems);

  const input: TransactionInput = {
    referenceId,
    ...settings,
    documents: def.documents.map((d) => ({
      title: d.title,
      ...(d.description !== undefined ? { description: d.description } : {}),
      source: { template: { sha256: d.sha256, ref: template.ref } },
      tags: d.tags.map(({ role, field, customData, ...tag }) => {
        const text = field === undefined ? undefined : values.get(field);
        return { ...tag, signerIndex: roleNames.indexOf(role), customData: { ...customData, ...(text !== undefined ? { text } : {}) } };
      }),
    })),
    participants: participants as ParticipantInput[],
  };
  // The transaction's own rules (the referenceId's form, limits) checked here, so a refusal names the request's part.
  const checked = EsignTransactionInput.safeParse(input);
  if (!checked.success) {
    throw new TemplateInputError(
      template.ref,
      checked.error.issues.map((i) => ({
        kind: 'invalid-value',
        name: formatPath(i.path),
        message: `${formatPath(i.path)}: ${i.message}`,
      })),
    );
  }
  return input;
}
