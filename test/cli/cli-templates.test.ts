// `esign template create|list|show` and `esign start --template`, run as the real CLI (bin/esign.js) against the
// suite's Temporal server, the test sandbox and a worker reading the same template store: the dev stack's default
// one, `<ESIGN_DATA_DIR>/templates`.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalTemplateStore, type StoredTemplate } from '../../src/templates/index.js';
import { esignCli } from '../support/cli.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { ndaTemplateFolder } from '../support/templates.js';

let env: EsignTestEnv;
let dataDir: string;
let folder: Awaited<ReturnType<typeof ndaTemplateFolder>>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'esign-cli-templates-'));
  folder = await ndaTemplateFolder();
  env = await startEsignTestEnv({ deps: { templates: new LocalTemplateStore(join(dataDir, 'templates')) } });
});
afterAll(async () => {
  await env?.close();
});

const esign = esignCli(() => ({
  ESIGN_TASK_QUEUE: env.taskQueue,
  ESIGN_PROVIDER_URL: env.sandbox.running.url,
  ESIGN_DATA_DIR: dataDir,
  ESIGN_TEMPLATE_STORE: '',
}));

describe('esign template', () => {
  it('creates versions idempotently, lists and shows them, and says what to do when something is wrong', async () => {
    const empty = await esign('template', 'list');
    expect(empty).toMatchObject({ code: 0, stderr: '' });
    expect(empty.stdout).toBe(
      `no templates in file://${join(dataDir, 'templates')}/ (create one: npx esign template create <definition.json>)\n`,
    );

    const created = await esign('--json', 'template', 'create', folder.file);
    expect(created.stderr).toBe('');
    const first = JSON.parse(created.stdout) as { ref: string; digest: string; created: boolean };
    expect(first).toMatchObject({ ref: 'NDA@1', created: true });
    expect(first.digest).toMatch(/^[0-9a-f]{64}$/);
    const again = await esign('template', 'create', folder.file);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`ref     NDA@1\ndigest  ${first.digest}\nnote    unchanged: NDA@1 already has this content\n`);
    expect(again.stdout).toContain(
      'next    npx esign start --template NDA@1 --role Employee="First Last <email>" --role Manager="First Last <email>" --value company=…',
    );

    const listed = JSON.parse((await esign('--json', 'template', 'list')).stdout) as { templates: { name: string; latest: number }[] };
    expect(listed.templates).toMatchObject([{ name: 'NDA', latest: 1, versions: 1, digest: first.digest, roles: ['Employee', 'Manager'] }]);
    const shown = JSON.parse((await esign('--json', 'template', 'show', 'NDA')).stdout) as StoredTemplate;
    expect(shown).toMatchObject({ ref: 'NDA@1', digest: first.digest, definition: { name: 'NDA' } });
    const human = await esign('template', 'show', 'NDA@1');
    expect(human.stdout).toMatch(
      /Roles \(in signing order\):\nROLE\s+AUTHENTICATION\s+TWOFACTOR\s+DESCRIPTION\n[- ]+\nEmployee\s+none\s+-\s+the new employee\nManager\s+none\s+email/,
    );
    expect(human.stdout).toMatch(/\ncompany\s+true\s+-\s+Company name\n/);

    const missing = await esign('template', 'show', 'NDA@7');
    expect(missing.code).toBe(3);
    expect(missing.stderr).toBe('esign: template "NDA@7" not found: NDA has versions 1 to 1 (list them with: npx esign template list)\n');

    const bad = join(folder.dir, 'bad.json');
    await writeFile(
      bad,
      JSON.stringify({
        ...folder.definition,
        roles: [{ name: 'Employee' }],
        documents: [{ ...folder.definition.documents[1], path: 'gone.pdf' }],
      }),
    );
    const refused = await esign('template', 'create', bad);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'esign: invalid template definition:\n' +
        '  fields[0]: field "company" is used by no tag: its value would go nowhere\n' +
        '  fields[1]: field "city" is used by no tag: its value would go nowhere\n' +
        '  fields[2]: field "startDate" is used by no tag: its value would go nowhere\n',
    );
    const notJson = await esign('template', 'create', join(folder.dir, 'nda.pdf'));
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/^esign: .*nda\.pdf is not JSON: /);
  });

  it('starts a transaction from a template with --role and --value, and refuses bad flags with every problem', async () => {
    await esign('template', 'create', folder.file);
    const referenceId = `cli-tpl-${Date.now().toString(36)}`;
    const started = await esign(
      '--json',
      'start',
      '--template',
      'NDA@1',
      '--role',
      'Employee=Ada Lovelace <ada@example.com>',
      '--role',
      'Manager=Charles Babbage <charles@example.com>',
      '--value',
      'company=Acme = Analytical Engines',
      '--reference-id',
      referenceId,
      '--signing-url',
    );
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    const out = JSON.parse(started.stdout) as { template: string; participants: { role: string; name: string }[]; signingUrl: string };
    expect(out).toMatchObject({ referenceId, workflowId: `esign-${referenceId}`, template: 'NDA@1' });
    expect(out.participants.map((p) => [p.role, p.name])).toEqual([
      ['Employee', 'Ada Lovelace'],
      ['Manager', 'Charles Babbage'],
    ]);
    expect(out.signingUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sign\//);
    const status = JSON.parse((await esign('--json', 'status', referenceId)).stdout) as { phase: string; participants: { name: string }[] };
    expect(status.participants.map((p) => p.name)).toEqual(['Ada Lovelace', 'Charles Babbage']);

    const badRef = `cli-tpl-bad-${Date.now().toString(36)}`;
    const refused = await esign(
      'start',
      '--template',
      'NDA',
      '--role',
      'Employe=Ada Lovelace <ada@example.com>',
      '--role',
      'Manager=Charles',
      '--value',
      'colour=blue',
      '--value',
      'startDate',
      '--reference-id',
      badRef,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'esign: cannot start from template NDA@1:\n' +
        '  role "Manager": expected "First Last <email>", got "Charles"\n' +
        '  --value must look like field=text, got "startDate"\n' +
        '  "Employe" is not a role of NDA@1 (its roles: "Employee", "Manager")\n' +
        '  role "Employee" (the new employee) has no person: give one (--role Employee="First Last <email>")\n' +
        '  "colour" is not a field of NDA@1 (its fields: "company", "city", "startDate")\n' +
        '  value "company" (Company name) is missing (--value company=…)\n' +
        '(see it with: npx esign template show NDA@1)\n',
    );
    expect((await esign('status', badRef)).code).toBe(3); // nothing was started

    const unknown = await esign('start', '--template', 'Lease@2', '--role', 'Tenant=Ada Lovelace <ada@example.com>');
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toBe(
      `esign: template "Lease@2" not found: no template named Lease in file://${join(dataDir, 'templates')}/ (list them with: npx esign template list)\n`,
    );
    const mixed = await esign('start', '--template', 'NDA', '--file', folder.file, '--signer', 'Ada Lovelace <ada@example.com>');
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toBe('esign: --template brings its own documents and roles: leave out --file, --signer\n');
    const orphan = await esign('start', '--role', 'Employee=Ada Lovelace <ada@example.com>');
    expect(orphan.code).toBe(2);
    expect(orphan.stderr).toBe('esign: --role and --value fill a template: give --template NAME[@VERSION] too\n');
  });
});
