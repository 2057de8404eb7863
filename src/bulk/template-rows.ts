/**
 * What bulk send needs of a template: the columns its CSV must have, and a row's transaction input. The row's
 * cells are the CLI's `--role` and `--value` in columns, so one parser and one set of errors serve both.
 */
import { TemplateInputError } from '../templates/errors.js';
import { instantiate } from '../templates/instantiate.js';
import type { StoredTemplate, TemplateReader } from '../templates/reader.js';
import { parseRoleValue, type TemplateRequest } from '../templates/request.js';
import type { EsignTransactionInput } from '../transaction/input.js';
import type { TemplateColumns } from './rows.js';

export type BulkTemplates = Pick<TemplateReader, 'get'>;

export function templateColumns(template: StoredTemplate): TemplateColumns {
  const { roles, fields = [] } = template.definition;
  return {
    roles: roles.map((r) => r.name),
    fields: fields.map((f) => ({ name: f.name, required: f.required !== false && f.default === undefined })),
  };
}

/** The transaction input of a row, or the reason it cannot be one (every problem, each naming its column). */
export function requestFor(
  template: StoredTemplate,
  referenceId: string,
  cells: { roles: Record<string, string>; values: Record<string, string> },
  batch: { callbackUrl?: string; signingDeadline?: string; reconcileInterval?: string },
): { input: EsignTransactionInput } | { reason: string } {
  const roles: TemplateRequest['roles'] = {};
  const problems: string[] = [];
  for (const [role, text] of Object.entries(cells.roles)) {
    try {
      roles[role] = parseRoleValue(text);
    } catch (err) {
      problems.push(`${role}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) return { reason: problems.join('; ') };
  try {
    const input = instantiate(template, {
      referenceId,
      roles,
      values: cells.values,
      overrides: {
        ...(batch.callbackUrl ? { callbackUrl: batch.callbackUrl } : {}),
        ...(batch.signingDeadline ? { signingDeadline: batch.signingDeadline } : {}),
        ...(batch.reconcileInterval ? { reconcileInterval: batch.reconcileInterval } : {}),
      },
    });
    return { input };
  } catch (err) {
    if (err instanceof TemplateInputError) return { reason: err.problems.map((p) => p.message).join('; ') };
    throw err;
  }
}
