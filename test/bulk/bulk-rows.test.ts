// A bulk send's CSV before anything starts: the header checked against the template (every problem named), rows
// kept with their lines, a batch id that depends on exactly its name, template version and file.
import { describe, expect, it } from 'vitest';
import { batchIdFor, BatchFileError, checkHeader, parseBatchCsv, referenceOf, splitCells } from '../../src/bulk/rows.js';
import { BATCH_ID } from '../../src/definitions/bulk.js';
import { REFERENCE_ID } from '../../src/transaction/input.js';

const template = {
  roles: ['Employee', 'Manager'],
  fields: [
    { name: 'company', required: true },
    { name: 'startDate', required: false },
  ],
};

describe('the header', () => {
  it('accepts the roles, the fields (an optional one may be absent) and referenceId', () => {
    expect(() => checkHeader(['Employee', 'Manager', 'company', 'referenceId'], template)).not.toThrow();
  });

  it('refuses a header no row could satisfy, naming every problem and what the template has', () => {
    const check = () => checkHeader(['Employee', 'Employee', 'compnay'], template);
    expect(check).toThrow(BatchFileError);
    expect(check).toThrow(/column "Employee" appears twice/);
    expect(check).toThrow(/column "compnay" is neither a role nor a merge field/);
    expect(check).toThrow(/no column for role "Manager"/);
    expect(check).toThrow(/no column for required field "company"/);
    expect(check).toThrow(/roles: Employee, Manager; fields: company, startDate/);
  });
});

describe('the rows', () => {
  it('keeps each row with its line in the file, quoted cells, blank lines and a BOM included', () => {
    const csv = Buffer.from(
      '\uFEFFEmployee,Manager,company\n"Lovelace, Ada <ada@example.com>",Bo <bo@example.com>,Acme\n\nGrace <g@example.com>,Bo <bo@example.com>,"Acme ""Intl"""\n',
    );
    const { header, rows } = parseBatchCsv(csv);
    expect(header).toEqual(['Employee', 'Manager', 'company']);
    expect(rows.map((r) => r.line)).toEqual([2, 4]);
    expect(rows[0]!.cells).toEqual({ Employee: 'Lovelace, Ada <ada@example.com>', Manager: 'Bo <bo@example.com>', company: 'Acme' });
    expect(rows[1]!.cells.company).toBe('Acme "Intl"');
  });

  it('refuses a row with more cells than the header by its line, and leaves out empty cells so defaults apply', () => {
    const { rows } = parseBatchCsv(
      Buffer.from('Employee,Manager,company,startDate\nA <a@x.org>,B <b@x.org>,Acme,,extra\nA <a@x.org>,B <b@x.org>,Acme,\n'),
    );
    expect(splitCells(rows[0]!, template)).toEqual({ reason: 'the row has 1 cell(s) more than the header' });
    expect(splitCells(rows[1]!, template)).toEqual({
      roles: { Employee: 'A <a@x.org>', Manager: 'B <b@x.org>' },
      values: { company: 'Acme' },
    });
  });

  it('refuses a row whose referenceId an earlier row has, naming that line', () => {
    const { rows } = parseBatchCsv(
      Buffer.from('Employee,company,referenceId\nA <a@x.org>,Acme,r-1\nB <b@x.org>,Acme,r-2\nC <c@x.org>,Acme,r-1\n'),
    );
    expect(rows.map((r) => r.error)).toEqual([undefined, undefined, 'referenceId "r-1" repeats line 2']);
  });

  it('says why a file is not CSV at all, and that an empty one needs a header', () => {
    expect(() => parseBatchCsv(Buffer.from('a,"b\n'))).toThrow(/the CSV cannot be read/);
    expect(() => parseBatchCsv(Buffer.from(''))).toThrow(/needs a header line/);
  });
});

describe('identity', () => {
  it('gives a batch an id from its name, template version and file, valid as a batch id and in every row reference', () => {
    const id = batchIdFor('Q3 NDAs — Europe', 'NDA@3', 'a'.repeat(64));
    expect(id).toMatch(/^bulk-q3-ndas-europe-[0-9a-f]{12}$/);
    expect(BATCH_ID.test(id)).toBe(true);
    expect(batchIdFor('Q3 NDAs — Europe', 'NDA@3', 'a'.repeat(64))).toBe(id);
    expect(batchIdFor('Q3 NDAs — Europe', 'NDA@4', 'a'.repeat(64))).not.toBe(id);
    expect(batchIdFor('Q3 NDAs — Europe', 'NDA@3', 'b'.repeat(64))).not.toBe(id);
    const long = batchIdFor('x'.repeat(500), 'NDA@3', 'a'.repeat(64));
    const ref = referenceOf(long, { line: 100_000, cells: {} });
    expect('referenceId' in ref && REFERENCE_ID.test(ref.referenceId)).toBe(true);
  });

  it("takes a row's own referenceId, and refuses one that could carry personal data", () => {
    expect(referenceOf('bulk-x-0123456789ab', { line: 2, cells: { referenceId: 'hr-2027-0001' } })).toEqual({
      referenceId: 'hr-2027-0001',
    });
    const refused = referenceOf('bulk-x-0123456789ab', { line: 3, cells: { referenceId: 'ada@example.com' } });
    expect('reason' in refused && refused.reason).toMatch(/no personal data/);
  });
});
