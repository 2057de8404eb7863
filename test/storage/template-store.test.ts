// Template stores, local and on an S3-compatible server: versions numbered per name, immutable, content-addressed
// (the same definition and bytes give back the latest version), documents kept once by their SHA-256, and every
// problem of a definition named at once.
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import {
  LocalTemplateStore,
  templateDigest,
  TemplateDefinitionError,
  TemplateDocumentNotFound,
  TemplateNotFound,
  templateStoreFromEnv,
  type TemplateDefinition,
  type TemplateStore,
} from '../../src/templates/index.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { ndaTemplateFolder } from '../support/templates.js';

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

interface Backend {
  store: TemplateStore;
  /** The document keys the backend holds, however it holds them. */
  documents: () => Promise<string[]>;
  /** Overwrites a stored document's bytes behind the store's back. */
  tamper: (sha: string, bytes: Buffer) => Promise<void>;
}

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3('esign-templates', { record: true });
});
afterAll(async () => {
  await s3?.close();
});

const backends: [string, () => Promise<Backend>][] = [
  [
    'a local directory',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'template-store-'));
      return {
        store: new LocalTemplateStore(dir),
        documents: async () => readdir(join(dir, 'documents')),
        tamper: (sha, bytes) => writeFile(join(dir, 'documents', `${sha}.pdf`), bytes),
      };
    },
  ],
  [
    'an S3-compatible bucket (ESIGN_TEMPLATE_STORE=s3://…)',
    async () => {
      const prefix = `run-${Math.random().toString(36).slice(2)}`;
      const store = templateStoreFromEnv({
        ESIGN_TEMPLATE_STORE: `s3://esign-templates/${prefix}`,
        ESIGN_ARCHIVE_S3_ENDPOINT: s3.endpoint,
      })!;
      return {
        store,
        documents: async () =>
          (await s3.client.send(new ListObjectsV2Command({ Bucket: 'esign-templates', Prefix: `${prefix}/documents/` }))).Contents!.map(
            (o) => o.Key!,
          ),
        tamper: async (sha, bytes) => {
          await s3.client.send(new PutObjectCommand({ Bucket: 'esign-templates', Key: `${prefix}/documents/${sha}.pdf`, Body: bytes }));
        },
      };
    },
  ],
];

describe.each(backends)('template store in %s', (_, open) => {
  it('numbers versions per name, returns the latest for unchanged content, and keeps each version as it was', async () => {
    const { store, documents } = await open();
    expect(store.location).toMatch(/^(file|s3):\/\//);
    const { dir, definition } = await ndaTemplateFolder();
    const nda = await readFile(join(dir, 'nda.pdf'));

    const first = await store.create(definition, dir);
    expect(first).toMatchObject({ ref: 'NDA@1', name: 'NDA', version: 1 });
    expect(first.createdAt).toMatch(/^20\d\d-/);
    // The stored definition names documents by hash, never by path; the digest covers it whole.
    expect(first.definition.documents.map((d) => d.sha256)).toEqual([sha256(nda), sha256(await readFile(join(dir, 'annex.pdf')))]);
    expect(JSON.stringify(first.definition)).not.toContain('nda.pdf');
    expect(first.digest).toBe(templateDigest(first.definition));
    expect(await store.get('NDA')).toEqual(first);
    expect(await store.get('NDA@1')).toEqual(first);

    // Idempotent: the same definition and bytes, even written in another key order from files of other names.
    expect(await store.create(definition, dir)).toEqual(first);
    await copyFile(join(dir, 'nda.pdf'), join(dir, 'renamed.pdf'));
    const again: TemplateDefinition = {
      defaults: definition.defaults,
      documents: definition.documents.map((d, i) => ({ tags: d.tags, path: i === 0 ? 'renamed.pdf' : d.path, title: d.title })),
      fields: definition.fields,
      roles: definition.roles,
      description: definition.description,
      name: 'NDA',
    };
    expect(await store.create(again, dir)).toEqual(first);

    // New bytes under the same path: a new version. Back to the first content: yet another (only the latest counts).
    await writeFile(join(dir, 'nda.pdf'), await samplePdf('Mutual non-disclosure agreement, revised'));
    const second = await store.create(definition, dir);
    expect(second).toMatchObject({ ref: 'NDA@2', version: 2 });
    expect(second.digest).not.toBe(first.digest);
    await writeFile(join(dir, 'nda.pdf'), nda);
    const third = await store.create(definition, dir);
    expect(third).toMatchObject({ ref: 'NDA@3', digest: first.digest });
    expect(await store.get('NDA')).toEqual(third);
    expect(await store.get('NDA@1')).toEqual(first);

    // Documents are kept once by hash: three documents for three versions (the NDA twice, its revision, the annex).
    expect((await documents()).map((k) => k.replace(/^.*\//, '')).sort()).toEqual(
      [sha256(nda), second.definition.documents[0]!.sha256, first.definition.documents[1]!.sha256].map((h) => `${h}.pdf`).sort(),
    );
    expect(sha256(await store.readDocument(first.definition.documents[0]!.sha256))).toBe(sha256(nda));

    expect(await store.list()).toEqual([
      {
        name: 'NDA',
        latest: 3,
        versions: 3,
        digest: first.digest,
        updatedAt: third.createdAt,
        description: 'Mutual NDA for new employees',
        roles: ['Employee', 'Manager'],
        fields: ['company', 'city', 'startDate'],
      },
    ]);
  });

  it('names the ref it cannot find, and refuses documents it does not hold or holds altered', async () => {
    const { store, tamper } = await open();
    const { dir, definition } = await ndaTemplateFolder('Offer-letter');
    const created = await store.create(definition, dir);

    const missing = await rejection(store.get('Nope'));
    expect(missing).toBeInstanceOf(TemplateNotFound);
    expect(missing.message).toBe(`template "Nope" not found: no template named Nope in ${store.location}`);
    expect((await rejection(store.get('Offer-letter@7'))).message).toBe(
      'template "Offer-letter@7" not found: Offer-letter has versions 1 to 1',
    );
    for (const bad of ['../etc@1', 'Offer-letter@0', 'Offer-letter@v2', '']) {
      const err = await rejection(store.get(bad));
      expect(err).toBeInstanceOf(TemplateNotFound);
      expect(err.message).toContain('"name" (its latest version) or "name@version"');
    }

    const unknown = 'f'.repeat(64);
    const notHeld = await rejection(store.readDocument(unknown));
    expect(notHeld).toBeInstanceOf(TemplateDocumentNotFound);
    expect(notHeld.message).toBe(`template document ${unknown} is not in the template store at ${store.location}`);
    const sha = created.definition.documents[1]!.sha256;
    await tamper(sha, Buffer.from('%PDF-1.7 not the annex'));
    const altered = await rejection(store.readDocument(sha));
    expect(altered).toBeInstanceOf(TemplateDocumentNotFound);
    expect(altered.message).toMatch(/has been altered \(its SHA-256 is now [0-9a-f]{64}\)/);
  });
});

describe('template definitions', () => {
  it('are refused with every problem named, the schema first and then every document', async () => {
    const store = new LocalTemplateStore(await mkdtemp(join(tmpdir(), 'template-store-')));
    const { dir, definition } = await ndaTemplateFolder();
    const broken = {
      ...definition,
      name: 'NDA 2',
      roles: [...definition.roles, { name: 'Employee' }, { name: 'Witness' }],
      fields: [...(definition.fields ?? []), { name: 'Manager' }, { name: 'unused' }, { name: 'bad', pattern: '(' }],
      documents: [
        {
          ...definition.documents[0]!,
          tags: [
            ...definition.documents[0]!.tags,
            { type: 'DATETEMPLATE', role: 'Boss', field: 'company', x: 1, y: 1, width: 9, height: 9, page: 0 },
          ],
        },
      ],
      extra: true,
    };
    const err = await rejection(store.create(broken as never, dir));
    expect(err).toBeInstanceOf(TemplateDefinitionError);
    expect((err as TemplateDefinitionError).problems.map((p) => `${p.path}: ${p.message}`).sort()).toEqual(
      [
        '(root): Unrecognized key: "extra"',
        'name: must be letters, digits and . _ - (at most 100), starting with a letter or digit',
        'roles[2].name: role "Employee" is defined twice',
        'roles[3]: role "Witness" has no tag: a participant would have nothing to sign',
        'fields[3].name: "Manager" is both a role and a field: CSV columns and --value need distinct names',
        'fields[4]: field "unused" is used by no tag: its value would go nowhere',
        'fields[5].pattern: is not a valid regular expression',
        'fields[5]: field "bad" is used by no tag: its value would go nowhere',
        'fields[3]: field "Manager" is used by no tag: its value would go nowhere',
        'documents[0].tags[5].role: "Boss" is not a role of this template (roles: Employee, Manager, Witness)',
        'documents[0].tags[5].field: only text tags (TEXTANNOT, FREEFORMTEXTTAGTEMPLATEANNOTATION) take a merge field',
      ].sort(),
    );

    await writeFile(join(dir, 'notes.txt'), 'not a PDF');
    const documents = [
      { ...definition.documents[0]!, path: 'missing.pdf' },
      { ...definition.documents[1]!, path: 'notes.txt' },
      {
        ...definition.documents[1]!,
        tags: [
          { ...definition.documents[1]!.tags[0]!, page: 2 },
          { ...definition.documents[1]!.tags[0]!, x: 600 },
        ],
      },
    ];
    const files = await rejection(store.create({ ...definition, documents }, dir));
    expect((files as TemplateDefinitionError).problems).toEqual([
      { path: 'documents[0].path', message: `no file ${join(dir, 'missing.pdf')}` },
      { path: 'documents[1].path', message: `${join(dir, 'notes.txt')}: not a PDF (missing %PDF- header)` },
      { path: 'documents[2].tags[0].page', message: "page 2 is beyond the PDF's 1 (pages count from 0)" },
      { path: 'documents[2].tags[1]', message: "the tag's box ends outside page 0 (612 × 792 points)" },
    ]);
    expect(await store.list()).toEqual([]);
  });

  it('are created once when several creates race for one name, and get distinct versions when they differ', async () => {
    const store = new LocalTemplateStore(await mkdtemp(join(tmpdir(), 'template-store-')));
    const { dir, definition } = await ndaTemplateFolder();
    const same = await Promise.all(Array.from({ length: 8 }, () => store.create(definition, dir)));
    expect(new Set(same.map((t) => t.ref))).toEqual(new Set(['NDA@1']));
    const different = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.create({ ...definition, description: `edition ${i}` }, dir)),
    );
    expect(different.map((t) => t.version).sort()).toEqual([2, 3, 4, 5, 6, 7]);
    for (const t of different) expect((await store.get(t.ref)).definition.description).toBe(t.definition.description);
  });

  it('claims an S3 version with a conditional write, so a concurrent create cannot overwrite it', async () => {
    const store = templateStoreFromEnv({
      ESIGN_TEMPLATE_STORE: 's3://esign-templates/conditional',
      ESIGN_ARCHIVE_S3_ENDPOINT: s3.endpoint,
    })!;
    const { dir, definition } = await ndaTemplateFolder('Conditional');
    s3.requests.length = 0;
    await store.create(definition, dir);
    const puts = s3.requests.filter((r) => r.method === 'PUT');
    expect(puts.map((r) => decodeURIComponent(r.url.split('?')[0]!).replace(/[0-9a-f]{64}/, '<sha>'))).toEqual([
      '/esign-templates/conditional/documents/<sha>.pdf',
      '/esign-templates/conditional/documents/<sha>.pdf',
      '/esign-templates/conditional/templates/Conditional/1.json',
    ]);
    for (const put of puts) expect(put.headers['if-none-match']).toBe('*');
  });
});

describe('the walkthrough', () => {
  it('uses an example definition that makes a template (README step 6, docs/examples/templates/nda.json)', async () => {
    const store = new LocalTemplateStore(await mkdtemp(join(tmpdir(), 'template-store-')));
    const file = fileURLToPath(new URL('../../docs/examples/templates/nda.json', import.meta.url));
    const created = await store.create(JSON.parse(await readFile(file, 'utf8')) as TemplateDefinition, dirname(file));
    expect(created).toMatchObject({ ref: 'NDA@1', definition: { roles: [{ name: 'Employee' }, { name: 'Manager' }] } });
    expect(created.definition.fields.filter((f) => f.required && f.default === undefined).map((f) => f.name)).toEqual(['company']);
  });
});

describe('ESIGN_TEMPLATE_STORE', () => {
  const base = { ESIGN_PROVIDER_TOKEN: 'token', ESIGN_SIGNATURE_VERIFICATION: 'off' };
  it('gives the worker its template store, a directory or s3://bucket/prefix, and refuses anything else by name', () => {
    expect(workerConfigFromEnv(base).templateStore).toBeUndefined();
    expect(workerConfigFromEnv({ ...base, ESIGN_TEMPLATE_STORE: '/srv/templates' }).templateStore).toEqual({
      location: '/srv/templates',
      s3: { region: 'us-east-1', endpoint: undefined },
    });
    const s3Setting = workerConfigFromEnv({
      ...base,
      ESIGN_TEMPLATE_STORE: 's3://acme-esign/templates',
      ESIGN_ARCHIVE_S3_REGION: 'eu-west-1',
    });
    expect(s3Setting.templateStore).toEqual({ location: 's3://acme-esign/templates', s3: { region: 'eu-west-1', endpoint: undefined } });
    expect(() => workerConfigFromEnv({ ...base, ESIGN_TEMPLATE_STORE: 's3://Bad_Bucket' })).toThrow(
      'invalid template store configuration: ESIGN_TEMPLATE_STORE: must be a directory or s3://bucket/prefix',
    );
  });
});
