// A `path` source is opened once, through directories and never through a symbolic link, and checked, hashed and
// uploaded through that one descriptor; failure messages name documents by position only; a URL source that
// trickles is cut off at its deadline. Issue 38.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { copyFile, link, mkdir, mkdtemp, open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDocumentActivities,
  type DocumentDeps,
  type UploadDocumentsInput,
  type UploadDocumentsResult,
} from '../../activities/documents.js';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { UrlPolicy } from '../../activities/support/url-policy.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { TemplateDocumentNotFound } from '../../src/templates/errors.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { StubHttpServer } from '../support/stub-http.js';

let sandbox: TestSandbox;
let origin: StubHttpServer;
let root: string;
let outside: string;
let insidePdf: Uint8Array;
let outsidePdf: Uint8Array;
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const trickles = new Set<NodeJS.Timeout>();

beforeAll(async () => {
  sandbox = await startTestSandbox();
  origin = await StubHttpServer.start();
  root = await mkdtemp(join(tmpdir(), 'doc-safety-root-'));
  outside = await mkdtemp(join(tmpdir(), 'doc-safety-outside-'));
  insidePdf = await samplePdf('Inside the roots');
  outsidePdf = await samplePdf('Outside the roots: must never be uploaded');
  expect(sha(insidePdf)).not.toBe(sha(outsidePdf));
  await writeFile(join(root, 'inside.pdf'), insidePdf);
  await writeFile(join(outside, 'doc.pdf'), outsidePdf);
  origin.handler = (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/trickle.pdf') {
      // Headers at once, then one byte at a time: never silent long enough for a between-chunks timeout.
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.write('%PDF-');
      const timer = setInterval(() => res.write(' '), 100);
      trickles.add(timer);
      res.on('close', () => clearInterval(timer));
    } else if (path === '/no-headers.pdf') {
      // Never answers.
    } else if (path === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    } else {
      res.writeHead(404);
      res.end();
    }
  };
});
afterAll(async () => {
  for (const t of trickles) clearInterval(t);
  // A reader still blocked opening the FIFO (what is refused here) is let go: it would hold a thread of the pool that
  // the files after this one in the same test process use.
  if (root)
    await open(join(root, 'fifo.pdf'), fsConstants.O_WRONLY | fsConstants.O_NONBLOCK).then(
      (h) => h.close(),
      () => undefined,
    );
  await origin?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

function upload(input: UploadDocumentsInput, deps: Partial<DocumentDeps> = {}): Promise<UploadDocumentsResult> {
  const activities = createDocumentActivities({
    client: sandbox.client,
    documentRoots: [root],
    urlPolicy: new UrlPolicy([origin.url]),
    maxDocumentBytes: 1_000_000,
    ...deps,
  });
  const run = (i: UploadDocumentsInput) => activities.uploadDocuments(i);
  return new MockActivityEnvironment().run<[UploadDocumentsInput], UploadDocumentsResult, typeof run>(run, input);
}

async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

/** The bytes the sandbox stored for an upload. */
function stored(storagePath: string): Promise<Buffer> {
  return readFile(join(sandbox.dataDir, 'files', 'uploads', ...storagePath.split('/')));
}

describe('a path source swapped for a symbolic link while it is read', () => {
  let swapper: ChildProcess | undefined;
  afterEach(async () => {
    if (swapper?.pid !== undefined && swapper.exitCode === null) {
      const exited = new Promise((resolve) => swapper!.once('exit', resolve));
      swapper.kill('SIGKILL');
      await exited;
    }
    swapper = undefined;
  });

  /** Runs `body` (plain JavaScript, `fs` in scope) in a tight loop in another process until killed: real concurrency. */
  async function startSwapper(body: string): Promise<void> {
    swapper = spawn(process.execPath, ['-e', `const fs = require('node:fs'); for (;;) { try { ${body} } catch {} }`], {
      stdio: 'ignore',
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  /** Uploads `path` many times, a few at once; every upload that succeeds must be the inside PDF, as hashed and as stored. */
  async function uploadRepeatedly(path: string, runs = 160, parallel = 4): Promise<{ uploaded: number; refusals: string[] }> {
    let uploaded = 0;
    const refusals: string[] = [];
    const escapes: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < runs) {
          next++;
          try {
            const result = await upload({ documents: [{ title: 'Raced', source: { path } }] });
            const storagePath = result.storagePaths[0]!;
            const bytes = await stored(storagePath);
            if (result.sha256![storagePath] !== sha(insidePdf) || sha(bytes) !== sha(insidePdf)) {
              escapes.push(`hash ${result.sha256![storagePath]}, stored ${sha(bytes)}`);
            }
            uploaded++;
          } catch (err) {
            refusals.push((err as Error).message);
          }
        }
      }),
    );
    expect(escapes, `the outside file (${sha(outsidePdf)}) was uploaded or hashed (${uploaded} uploads in all)`).toEqual([]);
    return { uploaded, refusals };
  }

  it('never uploads or hashes the outside file when the final component is swapped', async () => {
    const doc = join(root, 'raced.pdf');
    // Copies, not hard links: a file with several names is refused on its own.
    await copyFile(join(root, 'inside.pdf'), doc);
    const [lnk, fresh] = [join(root, '.raced-link'), join(root, '.raced-file')];
    await startSwapper(
      `fs.symlinkSync(${JSON.stringify(join(outside, 'doc.pdf'))}, ${JSON.stringify(lnk)}); fs.renameSync(${JSON.stringify(lnk)}, ${JSON.stringify(doc)});` +
        ` fs.copyFileSync(${JSON.stringify(join(root, 'inside.pdf'))}, ${JSON.stringify(fresh)}); fs.renameSync(${JSON.stringify(fresh)}, ${JSON.stringify(doc)});`,
    );
    const { uploaded, refusals } = await uploadRepeatedly(doc);
    // Both sides of the race happened: some reads found the file, some the link (refused, never followed).
    expect(uploaded).toBeGreaterThan(0);
    for (const message of refusals) expect(message).toMatch(/^documents\[0\]: (local path goes through a symbolic link|file not found)/);
  }, 120_000);

  it('never uploads or hashes the outside file when a directory on the path is swapped', async () => {
    const dir = join(root, 'raced-dir');
    await mkdir(dir);
    await copyFile(join(root, 'inside.pdf'), join(dir, 'doc.pdf'));
    const [parked, lnk] = [join(root, '.raced-dir-parked'), join(root, '.raced-dir-link')];
    await symlink(outside, lnk);
    const q = JSON.stringify;
    await startSwapper(
      `fs.renameSync(${q(dir)}, ${q(parked)}); fs.renameSync(${q(lnk)}, ${q(dir)}); ` +
        `fs.renameSync(${q(dir)}, ${q(lnk)}); fs.renameSync(${q(parked)}, ${q(dir)});`,
    );
    const { uploaded, refusals } = await uploadRepeatedly(join(dir, 'doc.pdf'));
    expect(uploaded).toBeGreaterThan(0);
    for (const message of refusals) expect(message).toMatch(/^documents\[0\]: (local path goes through a symbolic link|file not found)/);
  }, 120_000);
});

describe('path sources under the document roots', () => {
  it('refuses a symbolic link as the final component or as a directory, even one pointing inside the roots', async () => {
    await mkdir(join(root, 'real-dir'), { recursive: true });
    await writeFile(join(root, 'real-dir', 'doc.pdf'), insidePdf);
    await symlink(join(root, 'inside.pdf'), join(root, 'link-inside.pdf'));
    await symlink(join(outside, 'doc.pdf'), join(root, 'link-outside.pdf'));
    await symlink(join(root, 'real-dir'), join(root, 'link-dir-inside'));
    await symlink(outside, join(root, 'link-dir-outside'));
    for (const path of [
      join(root, 'link-inside.pdf'),
      join(root, 'link-outside.pdf'),
      join(root, 'link-dir-inside', 'doc.pdf'),
      join(root, 'link-dir-outside', 'doc.pdf'),
    ]) {
      const err = await failure(upload({ documents: [{ title: 'x', source: { path } }] }));
      expect(err, path).toMatchObject({ nonRetryable: true });
      expect(err.message, path).toMatch(
        /^documents\[0\]: (local path goes through a symbolic link|file not found under the document roots: local path is outside)/,
      );
    }
    // The file itself, through real directories, is fine.
    const ok = await upload({ documents: [{ title: 'x', source: { path: join(root, 'real-dir', 'doc.pdf') } }] });
    expect(ok.sha256![ok.storagePaths[0]!]).toBe(sha(insidePdf));
  });

  it('accepts a root configured through a symbolic link, spelled either way', async () => {
    const viaLink = join(outside, 'root-link');
    await symlink(root, viaLink);
    for (const path of [join(viaLink, 'inside.pdf'), join(root, 'inside.pdf')]) {
      const result = await upload({ documents: [{ title: 'x', source: { path } }] }, { documentRoots: [viaLink] });
      expect(result.sha256![result.storagePaths[0]!]).toBe(sha(insidePdf));
      expect(sha(await stored(result.storagePaths[0]!))).toBe(sha(insidePdf));
    }
  });

  it('refuses a hard link under a root (it may name a file outside), and a path no file can have, for good', async () => {
    // /tmp is one filesystem here, so the outside file can be linked in.
    await link(join(outside, 'doc.pdf'), join(root, 'hard.pdf'));
    const hard = await failure(upload({ documents: [{ title: 'x', source: { path: join(root, 'hard.pdf') } }] }));
    expect(hard).toMatchObject({ nonRetryable: true });
    expect(hard.message).toMatch(/^documents\[0\]: local path is a file with several names/);
    for (const path of [join(root, 'nul\u0000.pdf'), join(root, `${'n'.repeat(300)}.pdf`)]) {
      const bad = await failure(upload({ documents: [{ title: 'x', source: { path } }] }));
      expect(bad, JSON.stringify(path.slice(-20))).toMatchObject({ nonRetryable: true });
    }
  });

  it('refuses a FIFO or a directory without waiting on it', async () => {
    execFileSync('mkfifo', [join(root, 'fifo.pdf')]);
    const fifo = await failure(upload({ documents: [{ title: 'x', source: { path: join(root, 'fifo.pdf') } }] }));
    expect(fifo.message).toMatch(/^documents\[0\]: local path is not a regular file/);
    const dir = await failure(upload({ documents: [{ title: 'x', source: { path: join(root, 'real-dir') } }] }));
    expect(dir.message).toMatch(/^documents\[0\]: local path is not a regular file/);
  }, 10_000);
});

describe('failure messages (kept in Temporal history)', () => {
  const TITLE = 'Severance agreement - Jane Roe (jane.roe@example.com)';
  const PERSONAL = /jane|roe|severance|example\.com|secret-token/i;
  const withoutOrigins = (text: string) => text.replace(/https?:\/\/[^/\s?#]+/g, '<origin>');

  it('name documents by position, never by title, file name or URL query', async () => {
    const named = join(root, 'jane-roe');
    await mkdir(named, { recursive: true });
    await writeFile(join(named, 'jane-roe-empty.pdf'), '');
    await writeFile(join(named, 'jane-roe-notes.pdf'), 'Dear Jane Roe, not a PDF');
    await writeFile(join(named, 'jane-roe-big.pdf'), Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(1_000_001)]));
    await symlink(join(outside, 'doc.pdf'), join(named, 'jane-roe-link.pdf'));
    const query = '?name=jane.roe%40example.com&token=secret-token';
    const garbage = Buffer.from('%PDF-1.7 but nothing a PDF reader accepts, for Jane Roe');
    const templates = (bytes?: Buffer): DocumentDeps['templates'] => ({
      location: 'memory',
      readDocument: (sha256) => (bytes ? Promise.resolve(bytes) : Promise.reject(new TemplateDocumentNotFound(sha256, 'memory'))),
    });
    const cases: [string, UploadDocumentsInput['documents'][number]['source'], Partial<DocumentDeps>?][] = [
      ['missing file', { path: join(named, 'jane-roe-missing.pdf') }],
      ['outside the roots', { path: join(outside, 'jane-roe.pdf') }],
      ['symbolic link', { path: join(named, 'jane-roe-link.pdf') }],
      ['empty', { path: join(named, 'jane-roe-empty.pdf') }],
      ['not a PDF', { path: join(named, 'jane-roe-notes.pdf') }],
      ['too big', { path: join(named, 'jane-roe-big.pdf') }],
      ['URL off the allow-list', { url: `https://jane-roe.example.com/jane-roe.pdf${query}` }],
      ['URL answering 404', { url: `${origin.url}/jane-roe.pdf${query}` }],
      ['URL answering HTML', { url: `${origin.url}/page.html${query}` }],
      ['template without a store', { template: { sha256: 'a'.repeat(64) } }],
      ['template missing from the store', { template: { sha256: 'b'.repeat(64) } }, { templates: templates() }],
      // The provider refuses it, quoting the file name it was sent (made from the title).
      ['template refused by the provider', { template: { sha256: sha(garbage) } }, { templates: templates(garbage) }],
    ];
    for (const [name, source, deps] of cases) {
      const err = await failure(upload({ documents: [{ title: TITLE, source }] }, deps));
      expect(err.message, name).toContain('documents[0]');
      // A URL's origin may be named (it is what the allow-list is about), nothing after it.
      expect(withoutOrigins(err.message), name).not.toMatch(PERSONAL);
      expect(JSON.stringify(err.details ?? []), name).not.toMatch(PERSONAL);
    }
  }, 30_000);

  it('input validation names fields, not the values in them', async () => {
    const validation = createInputValidationActivities({
      urlPolicy: new UrlPolicy([]),
      minReconcileMs: 60_000,
      canSignCallbacks: false,
      requireUploadHashes: true,
    });
    const base = {
      referenceId: 'ref-1',
      documents: [{ title: TITLE, source: { path: '/srv/docs/jane-roe.pdf' } }],
      participants: [{ firstName: 'Jane', lastName: 'Roe', email: 'jane.roe@example.com' }],
    };
    const bad: unknown[] = [
      { ...base, participants: [{ firstName: 'Jane', lastName: 'Roe', email: 'jane.roe(at)example.com' }] },
      { ...base, documents: [{ title: TITLE, source: { storagePath: 'jane-roe/severance.pdf' } }] },
      { ...base, documents: [{ title: TITLE.repeat(10), source: { path: '/srv/docs/jane-roe.pdf' } }] },
      { ...base, callbackUrl: 'https://jane-roe.example.com/hook?token=secret-token' },
    ];
    for (const input of bad) {
      const err = await failure(validation.validateTransactionInput(input));
      expect(err.message).toMatch(/^invalid input: /);
      expect(withoutOrigins(err.message)).not.toMatch(PERSONAL);
      expect(err.message).not.toContain('secret-token');
    }
  });
});

describe('a URL source that trickles', () => {
  it('is refused, retryably, within its download deadline', async () => {
    for (const path of ['/trickle.pdf', '/no-headers.pdf']) {
      const started = Date.now();
      const err = await failure(
        upload({ documents: [{ title: 'x', source: { url: `${origin.url}${path}` } }] }, { downloadTimeoutMs: 800 }),
      );
      expect(Date.now() - started, path).toBeLessThan(5_000);
      expect(err, path).toMatchObject({ type: 'DocumentSourceUnavailable', nonRetryable: false });
      expect(err.message, path).toMatch(/^documents\[0\]: source URL http:\/\/127\.0\.0\.1:\d+ did not deliver the document within 800 ms/);
    }
  }, 15_000);
});
