/**
 * A bulk send's CSV: its header checked against the template before anything starts, its rows split into pages,
 * and each row turned into a template request. A bad header refuses the batch; a bad row is reported (its line
 * and reason) and the batch goes on.
 */
import { createHash } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { rowReferenceId } from '../definitions/bulk.js';
import { REFERENCE_ID, REFERENCE_ID_RULE } from '../transaction/input.js';

/** The column a row may name its own reference in (otherwise `<batchId>.<line>`). */
export const REFERENCE_COLUMN = 'referenceId';

export interface BatchRow {
  /** Its line in the file (the header is line 1). */
  line: number;
  cells: Record<string, string>;
  /** Why it cannot start, found when the file was read (a referenceId an earlier row has). */
  error?: string;
}

/** What the header must match: the template's roles (one column each) and merge fields. */
export interface TemplateColumns {
  roles: string[];
  fields: { name: string; required: boolean }[];
}

export class BatchFileError extends Error {
  override readonly name = 'BatchFileError';
}

/** The batch's id: its name's slug and a digest of its name, template and file, so a resubmission finds it. */
export function batchIdFor(name: string, template: string, csvSha256: string): string {
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'batch';
  const digest = createHash('sha256').update(`${name}\n${template}\n${csvSha256}`).digest('hex').slice(0, 12);
  return `bulk-${slug}-${digest}`;
}

export function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Parses the file: the header and every non-empty row with its line. A row with the wrong number of cells is kept (and refused later, by line). */
export function parseBatchCsv(csv: Buffer): { header: string[]; rows: BatchRow[] } {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(csv, {
      bom: true,
      info: true,
      skip_empty_lines: true,
      relax_column_count: true,
      trim: true,
    }) as unknown as typeof records;
  } catch (err) {
    throw new BatchFileError(`the CSV cannot be read: ${(err as Error).message}`);
  }
  const [head, ...body] = records;
  if (!head) throw new BatchFileError('the CSV is empty: it needs a header line naming the roles and merge fields');
  const header = head.record;
  const rows: BatchRow[] = body.map(({ record, info }) => {
    const cells: Record<string, string> = {};
    header.forEach((column, i) => {
      if (record[i] !== undefined && record[i] !== '') cells[column] = record[i]!;
    });
    // More cells than columns: kept under a name no column has, so the row is refused with its line.
    if (record.length > header.length) cells['\u0000extra'] = String(record.length - header.length);
    return { line: info.lines, cells };
  });
  // Two rows naming one referenceId would share one transaction: the later ones are refused.
  const firstLine = new Map<string, number>();
  for (const row of rows) {
    const ref = row.cells[REFERENCE_COLUMN];
    if (ref === undefined) continue;
    const first = firstLine.get(ref);
    if (first === undefined) firstLine.set(ref, row.line);
    else row.error = `referenceId "${ref}" repeats line ${first}`;
  }
  return { header, rows };
}

/** Refuses a header that no row could satisfy: an unknown column, a duplicate, a role or required field without one. */
export function checkHeader(header: string[], template: TemplateColumns): void {
  const problems: string[] = [];
  const known = new Set([...template.roles, ...template.fields.map((f) => f.name), REFERENCE_COLUMN]);
  const seen = new Set<string>();
  for (const column of header) {
    if (seen.has(column)) problems.push(`column "${column}" appears twice`);
    seen.add(column);
    if (!known.has(column)) problems.push(`column "${column}" is neither a role nor a merge field of the template`);
  }
  for (const role of template.roles) if (!seen.has(role)) problems.push(`no column for role "${role}"`);
  for (const field of template.fields)
    if (field.required && !seen.has(field.name)) problems.push(`no column for required field "${field.name}"`);
  if (problems.length > 0)
    throw new BatchFileError(
      `the CSV's header does not match the template: ${problems.join('; ')} (roles: ${template.roles.join(', ') || 'none'}; fields: ${template.fields.map((f) => f.name).join(', ') || 'none'})`,
    );
}

/** A row's reference: its own column, or one from the batch and line. Undefined with a reason when it is unusable. */
export function referenceOf(batchId: string, row: BatchRow): { referenceId: string } | { reason: string } {
  const own = row.cells[REFERENCE_COLUMN];
  if (own === undefined) return { referenceId: rowReferenceId(batchId, row.line) };
  if (!REFERENCE_ID.test(own)) return { reason: `referenceId "${own}" ${REFERENCE_ID_RULE}` };
  return { referenceId: own };
}

/** The row's role and field cells, apart; undefined with a reason for a row whose cell count is wrong. */
export function splitCells(
  row: BatchRow,
  template: TemplateColumns,
): { roles: Record<string, string>; values: Record<string, string> } | { reason: string } {
  if (row.cells['\u0000extra'] !== undefined) return { reason: `the row has ${row.cells['\u0000extra']} cell(s) more than the header` };
  const roles: Record<string, string> = {};
  const values: Record<string, string> = {};
  for (const [column, value] of Object.entries(row.cells)) {
    if (template.roles.includes(column)) roles[column] = value;
    else if (column !== REFERENCE_COLUMN) values[column] = value;
  }
  return { roles, values };
}
