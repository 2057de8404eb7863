import { createHash } from 'node:crypto';
import { mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentActivities, type UploadDocumentsInput, type UploadDocumentsResult } from '../../activities/documents.js';
import { UrlPolicy } from '../../activities/support/url-policy.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { StubHttpServer } from '../support/stub-http.js';

// The activity runs outside a workflow (MockActivityEnvironment) but against a
// real sandbox and a real HTTP server for URL sources.
let sandbox: TestSandbox;
let origin: StubHttpServer;
let root: string;
let pdf: Uint8Array;
beforeAll(async () => {
  sandbox = await startTestSandbox();
  origin = await StubHttpServer.start();
  root = await mkdtemp(join(tmpdir(), 'doc-roots-'));
  pdf = await samplePdf('From URL');
  origin.handler = (req, res) => {
    if (req.url === '/contract.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.end(Buffer.from(pdf));
    } else if (req.url === '/redirect.pdf') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' });
      res.end();
    } else if (req.url === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    } else {
      res.writeHead(404);
      res.end();
    }
  };
});
afterAll(async () => {
  await origin?.close();
  await sandbox?.close();
});

function upload(input: UploadDocumentsInput) {
  const activities = createDocumentActivities({
    client: sandbox.client,
    documentRoots: [root],
    urlPolicy: new UrlPolicy([origin.url]),
    maxDocumentBytes: 1_000_000,
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

describe('uploadDocuments sources', () => {
  it('uploads an allowed URL and a local file, and passes StoragePaths through', async () => {
    const local = join(root, 'local.pdf');
    await writeFile(local, pdf);
    const result = await upload({
      documents: [
        { title: 'URL', source: { url: `${origin.url}/contract.pdf` } },
        { title: 'Local', source: { path: local } },
        { title: 'Given', source: { storagePath: 'folder/given.pdf', sha256: 'a'.repeat(64) } },
      ],
    });
    expect(result.storagePaths[0]).toMatch(/\/contract\.pdf$/);
    expect(result.storagePaths[1]).toMatch(/\/local\.pdf$/);
    expect(result.storagePaths[2]).toBe('folder/given.pdf');
    // What the archive will hold the provider's originals to: computed for uploads, as given for the caller's own.
    const pdfHash = createHash('sha256').update(pdf).digest('hex');
    expect(result.sha256).toEqual({
      [result.storagePaths[0]!]: pdfHash,
      [result.storagePaths[1]!]: pdfHash,
      'folder/given.pdf': 'a'.repeat(64),
    });
  });

  it('refuses hosts off the allow-list, redirects, and non-PDF bodies, without uploading', async () => {
    const off = await failure(upload({ documents: [{ title: 'x', source: { url: 'http://127.0.0.2:9/contract.pdf' } }] }));
    expect(off).toMatchObject({ type: 'UrlNotAllowed', nonRetryable: true });
    const redirect = await failure(upload({ documents: [{ title: 'x', source: { url: `${origin.url}/redirect.pdf` } }] }));
    expect(redirect).toMatchObject({ type: 'UrlNotAllowed', nonRetryable: true });
    expect(redirect.message).toContain('redirects');
    const html = await failure(upload({ documents: [{ title: 'x', source: { url: `${origin.url}/page.html` } }] }));
    expect(html).toMatchObject({ type: 'InvalidDocument', nonRetryable: true });
  });

  it('refuses local paths outside the document roots, including through a symlink', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'outside-'));
    await writeFile(join(outside, 'secret.pdf'), pdf);
    await symlink(join(outside, 'secret.pdf'), join(root, 'link.pdf'));
    for (const path of [join(outside, 'secret.pdf'), join(root, 'link.pdf'), join(root, '..', 'x.pdf')]) {
      const err = await failure(upload({ documents: [{ title: 'x', source: { path } }] }));
      expect(err.nonRetryable).toBe(true);
    }
    await writeFile(join(root, 'empty.pdf'), '');
    const empty = await failure(upload({ documents: [{ title: 'x', source: { path: join(root, 'empty.pdf') } }] }));
    expect(empty.message).toContain('is empty');
  });
});
