// Filling a template: roles become participants in order, tags by role become tags by signerIndex, merge values
// are prefilled into text tags; every problem of a request is reported at once, each naming its role or field.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  instantiate,
  LocalTemplateStore,
  parseRoleValue,
  participantIdFor,
  TemplateInputError,
  type StoredTemplate,
  type TemplateProblem,
  type TemplateRequest,
} from '../../src/templates/index.js';
import { EsignTransactionInput, REFERENCE_ID_RULE } from '../../src/transaction/input.js';
import { ndaTemplateFolder } from '../support/templates.js';

let nda: StoredTemplate;
beforeAll(async () => {
  const { dir, definition } = await ndaTemplateFolder();
  nda = await new LocalTemplateStore(await mkdtemp(join(tmpdir(), 'template-store-'))).create(definition, dir);
});

const request = (overrides: Partial<TemplateRequest> = {}): TemplateRequest => ({
  referenceId: 'nda-0001',
  roles: {
    Employee: { name: 'Ada Lovelace', email: 'ada@example.com' },
    Manager: { firstName: 'Charles', lastName: 'Babbage', email: 'charles@example.com' },
  },
  values: { company: 'Łódź Analytical Engines Sp. z o.o.' },
  ...overrides,
});

function problems(run: () => unknown): TemplateProblem[] {
  let thrown: unknown;
  try {
    run();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(TemplateInputError);
  return [...(thrown as TemplateInputError).problems];
}

describe('instantiate', () => {
  it('makes a valid transaction input: participants in role order, tags by signerIndex, merge values in text tags', () => {
    const input = instantiate(nda, request());
    expect(EsignTransactionInput.safeParse(input).success).toBe(true);
    expect(input.participants).toEqual([
      {
        id: participantIdFor('nda-0001', 'Employee'),
        order: 1,
        firstName: 'Ada',
        lastName: 'Lovelace',
        email: 'ada@example.com',
        authenticationType: 'none',
        twoFactorContact: 'email',
      },
      {
        id: participantIdFor('nda-0001', 'Manager'),
        order: 2,
        firstName: 'Charles',
        lastName: 'Babbage',
        email: 'charles@example.com',
        authenticationType: 'none',
        twoFactorContact: 'email',
      },
    ]);
    expect(input.participants[0]!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(input.documents.map((d) => [d.title, d.source])).toEqual([
      ['NDA', { template: { sha256: nda.definition.documents[0]!.sha256, ref: 'NDA@1' } }],
      ['Annex', { template: { sha256: nda.definition.documents[1]!.sha256, ref: 'NDA@1' } }],
    ]);
    expect(input.documents[0]!.tags!.map((t) => [t.type, t.signerIndex, t.customData])).toEqual([
      ['TEXTANNOT', 0, { text: 'Łódź Analytical Engines Sp. z o.o.' }],
      ['TEXTANNOT', 0, { text: '2027-01-04' }], // the field's default
      ['FREEFORMTEXTTAGTEMPLATEANNOTATION', 0, {}], // optional, no value: the signer types it
      ['SIGNATURETEMPLATE', 0, {}],
      ['SIGNATURETEMPLATE', 1, {}],
    ]);
    expect(input.documents[0]!.tags![2]).toMatchObject({ required: false, x: 240, y: 360, width: 150, height: 20, page: 0 });
    expect(input.documents[1]!.tags!.map((t) => t.signerIndex)).toEqual([0]);
    // The template's defaults, then what the caller overrides.
    expect(input).toMatchObject({ emailSubject: 'Your NDA', notifyParticipants: { email: false }, signingDeadline: '14 days' });
    const overridden = instantiate(
      nda,
      request({
        values: { company: 'Acme', startDate: '2027-02-01', city: 'Paris' },
        overrides: { signingDeadline: '3 days', status: 'draft', title: 'NDA for Ada' },
      }),
    );
    expect(overridden).toMatchObject({ signingDeadline: '3 days', status: 'draft', title: 'NDA for Ada', emailSubject: 'Your NDA' });
    expect(overridden.documents[0]!.tags!.map((t) => t.customData)).toEqual([
      { text: 'Acme' },
      { text: '2027-02-01' },
      { text: 'Paris' },
      {},
      {},
    ]);
  });

  it("carries approvers from the request's overrides, and refuses approvers the transaction could not take", () => {
    const approval = { approvers: [{ id: 'cfo' }, { id: 'legal' }], quorum: 1 };
    const input = instantiate(nda, request({ overrides: { approval } }));
    expect(EsignTransactionInput.parse(input).approval).toMatchObject({ ...approval, deadline: '7 days' });
    // The template's 14-day signing deadline leaves no room for a 30-day approval.
    expect(
      problems(() => instantiate(nda, request({ overrides: { approval: { ...approval, deadline: '30 days' } } }))).map((p) => p.message),
    ).toEqual(['approval.deadline: the approval deadline must come before the signing deadline']);
  });

  it('is deterministic: the same request gives the same input, another reference other participant ids', () => {
    expect(instantiate(nda, request())).toEqual(instantiate(nda, request()));
    const other = instantiate(nda, request({ referenceId: 'nda-0002' }));
    expect(other.participants.map((p) => p.id)).not.toEqual(instantiate(nda, request()).participants.map((p) => p.id));
  });

  it('reports every role and merge-field problem at once, each naming its role or field', () => {
    const found = problems(() =>
      instantiate(nda, {
        referenceId: 'nda-0003',
        roles: { Employe: { name: 'Ada Lovelace', email: 'ada@example.com' } },
        values: { compnay: 'Acme', startDate: 'next Monday' },
      }),
    );
    expect(found).toEqual([
      { kind: 'unknown-role', name: 'Employe', message: '"Employe" is not a role of NDA@1 (its roles: "Employee", "Manager")' },
      { kind: 'missing-role', name: 'Employee', message: 'role "Employee" (the new employee) has no person: give one' },
      { kind: 'missing-role', name: 'Manager', message: 'role "Manager" has no person: give one' },
      { kind: 'unknown-value', name: 'compnay', message: '"compnay" is not a field of NDA@1 (its fields: "company", "city", "startDate")' },
      { kind: 'missing-value', name: 'company', message: 'value "company" (Company name) is missing' },
      {
        kind: 'invalid-value',
        name: 'startDate',
        message: `value "startDate" does not match the field's pattern [0-9]{4}-[0-9]{2}-[0-9]{2}`,
      },
    ]);
    expect(problems(() => instantiate(nda, request({ values: { company: '' } })))).toEqual([
      { kind: 'missing-value', name: 'company', message: 'value "company" is empty, and the field is required' },
    ]);
    expect(problems(() => instantiate(nda, request({ values: { company: 'Acme\nInc' } })))[0]).toMatchObject({
      kind: 'invalid-value',
      name: 'company',
    });
  });

  it('refuses people, references and overrides the transaction could not take, naming each', () => {
    const found = problems(() =>
      instantiate(nda, {
        referenceId: 'Ada Lovelace',
        roles: {
          Employee: { name: 'Plato', email: 'plato@example.com' },
          Manager: { firstName: 'Charles', lastName: 'Babbage', email: 'not-an-email', authenticationType: 'personal-password' },
        },
        values: { company: 'Acme' },
        overrides: { reminders: { firstAfter: '1 day', every: '1 day' }, documents: [] } as never,
      }),
    );
    expect(found.map((p) => [p.kind, p.name])).toEqual([
      ['invalid-value', 'referenceId'],
      ['invalid-value', 'Employee'],
      ['invalid-value', 'Manager'],
      ['invalid-value', 'overrides'],
    ]);
    expect(found[0]!.message).toBe(`referenceId "Ada Lovelace" ${REFERENCE_ID_RULE}`);
    expect(found[1]!.message).toBe('role "Employee": "Plato" is one name: the provider needs a first and a last name');
    expect(found[2]!.message).toBe('role "Manager": email: Invalid email address');
    expect(found[3]!.message).toMatch(/^overrides: Unrecognized key: "documents" \(a template start may set: title, status, callbackUrl, /);

    expect(
      problems(() =>
        instantiate(
          nda,
          request({
            roles: {
              Employee: { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', authenticationType: 'personal-password' },
              Manager: { name: 'Charles Babbage', email: 'charles@example.com' },
            },
            overrides: { reminders: { firstAfter: '1 day', every: '1 day' } },
          }),
        ),
      ),
    ).toEqual([
      {
        kind: 'invalid-value',
        name: 'Employee',
        message: 'role "Employee": this role signs with a personal password: give personalPassword',
      },
      {
        kind: 'invalid-value',
        name: 'overrides.callbackUrl',
        message: 'NDA@1 sends reminders, which go to a callbackUrl: give overrides.callbackUrl',
      },
    ]);
  });

  it('never crashes on input of the wrong shape: it says what is wrong', () => {
    expect(problems(() => instantiate(nda, null as never)).map((p) => p.name)).toEqual(['referenceId', 'Employee', 'Manager', 'company']);
    expect(problems(() => instantiate(nda, { referenceId: 'x', roles: 'Ada' as never, values: 7 as never })).map((p) => p.kind)).toEqual([
      'missing-role',
      'missing-role',
      'invalid-value',
    ]);
    expect(
      problems(() =>
        instantiate(
          nda,
          request({
            roles: { Employee: 'Ada Lovelace <ada@example.com>' as never, Manager: {} as never },
            values: { company: 3 as never },
          }),
        ),
      ),
    ).toEqual([
      { kind: 'invalid-value', name: 'Employee', message: 'role "Employee": Invalid input: expected object, received string' },
      {
        kind: 'invalid-value',
        name: 'Manager',
        message:
          'role "Manager": firstName: Invalid input: expected string, received undefined; lastName: Invalid input: expected string, received undefined; email: Invalid input: expected string, received undefined',
      },
      { kind: 'invalid-value', name: 'company', message: 'value "company" must be text' },
    ]);
  });
});

describe('parseRoleValue', () => {
  it('reads "First Last <email>", several first names included, and says what it expects otherwise', () => {
    expect(parseRoleValue('Ada Lovelace <ada@example.com>')).toEqual({ firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com' });
    expect(parseRoleValue('  Mary Ann Evans<george@example.com> ')).toEqual({
      firstName: 'Mary Ann',
      lastName: 'Evans',
      email: 'george@example.com',
    });
    expect(() => parseRoleValue('ada@example.com')).toThrow('expected "First Last <email>", got "ada@example.com"');
    expect(() => parseRoleValue('Ada Lovelace <ada>')).toThrow('"ada" is not an e-mail address');
    expect(() => parseRoleValue('Plato <plato@example.com>')).toThrow('"Plato" is one name: the provider needs a first and a last name');
  });
});
