// Attacks on the `{object: {sha256}}` document source (docs/decisions/document-object-store.md): what a writer of
// the workers' object store, or a caller naming an object, can plant for the worker's `uploadDocuments` to read,
// and the package's S3 client addressing another object than the one named. Real parts: the activity against the
// provider sandbox over HTTP, a directory store on disk, and, for S3, a real HTTP server answering as S3 would.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { mkdir, mkdtemp, open, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentActivities, type UploadDocumentsInput, type UploadDocumentsResult } from '../../activities/documents.js';
import { UrlPolicy } from '../../activities/support/url-policy.js';
import { s3Client } from '../../src/archive/s3-store.js';
import { uploadDocument } from '../../src/client/documents.js';
import { FailureType } from '../../src/failures.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { documentObjectKey } from '../../src/storage/documents.js';
import { LocalObjectStore, ObjectRefused, type ObjectStore } from '../../src/storage/object-store.js';
import { S3HttpClient, S3HttpObjectStore } from '../../src/storage/s3-http.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { StubHttpServer } from '../support/stub-http.js';

const MAX = 1_000_000;
let sandbox: TestSandbox;
let stub: StubHttpServer;
let work: string;
let storeDir: string;
let pdf: Buffer;
let sha256: string;
const fifos: string[] = [];

beforeAll(async () => {
  sandbox = await startTestSandbox();
  stub = await StubHttpServer.start();
  work = await mkdtemp(join(tmpdir(), 'object-attacks-'));
  storeDir = join(work, 'store');
  await mkdir(join(storeDir, 'uploads'), { recursive: true });
  pdf = Buffer.from(await samplePdf('Stored by a backend'));
  sha256 = createHash('sha256').update(pdf).digest('hex');
  process.env.AWS_ACCESS_KEY_ID ??= 'TEST';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'TEST';
});
// Put back for the files that run after this one in the same process: s3rver (test/support/s3.ts) knows only its own.
const awsKeys = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
afterAll(() => {
  for (const [name, value] of [
    ['AWS_ACCESS_KEY_ID', awsKeys.id],
    ['AWS_SECRET_ACCESS_KEY', awsKeys.secret],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
});
afterAll(async () => {
  // A reader still blocked opening a FIFO (the behaviour refused here) is let go, so the process can end.
  for (const fifo of fifos)
    await open(fifo, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK).then(
      (h) => h.close(),
      () => undefined,
    );
  await stub?.close();
  await sandbox?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

function upload(objects: Pick<ObjectStore, 'get' | 'location'>, sha: string) {
  const activities = createDocumentActivities({
    client: sandbox.client,
    documentRoots: [],
    urlPolicy: new UrlPolicy([]),
    maxDocumentBytes: MAX,
    objects,
  });
  const run = (i: UploadDocumentsInput) => activities.uploadDocuments(i);
  return new MockActivityEnvironment().run<[UploadDocumentsInput], UploadDocumentsResult, typeof run>(run, {
    documents: [{ title: 'Contract', source: { object: { sha256: sha } } }],
  });
}

async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

/** A file in the store at a document's key, as a writer of the store (not `uploadDocument`) could leave it. */
const keyPath = (sha: string) => join(storeDir, ...documentObjectKey(sha).split('/'));

describe('a directory store', () => {
  it('refuses a symbolic link at uploads/<sha256>.pdf, even to a PDF with that hash outside the store: nothing is uploaded', async () => {
    const outside = join(work, 'outside.pdf');
    await writeFile(outside, pdf);
    await symlink(outside, keyPath(sha256));
    try {
      const before = await sandbox.control.stats();
      const refused = await failure(upload(new LocalObjectStore(storeDir), sha256));
      expect(refused).toMatchObject({ type: FailureType.InvalidDocument, nonRetryable: true });
      expect(refused.message).toBe(`documents[0]: the stored uploads/${sha256}.pdf is a symbolic link`);
      expect(await sandbox.control.stats()).toEqual(before);
    } finally {
      await rm(keyPath(sha256));
    }
  });

  it('refuses a FIFO at the key rather than waiting on it for a writer', async () => {
    const sha = 'c'.repeat(64);
    execFileSync('mkfifo', [keyPath(sha)]);
    fifos.push(keyPath(sha));
    const refused = await failure(upload(new LocalObjectStore(storeDir), sha));
    expect(refused).toMatchObject({ type: FailureType.InvalidDocument, nonRetryable: true });
    expect(refused.message).toBe(`documents[0]: the stored uploads/${sha}.pdf is not a regular file`);
  });

  it('refuses an object over the size limit for good, from its size, without reading it (a 3 GiB file)', async () => {
    const sha = 'b'.repeat(64);
    await writeFile(keyPath(sha), '%PDF-');
    await truncate(keyPath(sha), 3 * 1024 ** 3); // sparse: no disk used
    try {
      const refused = await failure(upload(new LocalObjectStore(storeDir), sha));
      expect(refused).toMatchObject({ type: FailureType.InvalidDocument, nonRetryable: true });
      expect(refused.message).toBe(`documents[0]: the stored uploads/${sha}.pdf is ${3 * 1024 ** 3} bytes, over the ${MAX}-byte limit`);
    } finally {
      await rm(keyPath(sha));
    }
  });

  it('holds: a SHA-256 that is not 64 lowercase hex never reaches the store, and an object is read once', async () => {
    const gets: string[] = [];
    const recording = {
      location: 'memory:',
      get: (key: string) => {
        gets.push(key);
        return Promise.resolve(pdf);
      },
    };
    for (const bad of [
      '../../../etc/passwd',
      sha256.toUpperCase(),
      `${sha256.slice(0, 63)}é`,
      `${sha256}\0`,
      `${sha256}\n`,
      `%2e%2e/${sha256}`,
      sha256.repeat(4),
    ]) {
      await expect(upload(recording, bad)).rejects.toThrow(/not a lowercase hex SHA-256/);
    }
    expect(gets).toEqual([]);
    // Read once into the activity's own memory, hashed there and uploaded from its private copy: an object
    // replaced after the check is never read again.
    const result = await upload(recording, sha256);
    expect(gets).toEqual([documentObjectKey(sha256)]);
    expect(Object.values(result.sha256 ?? {})).toEqual([sha256]);
  });
});

describe('an S3 store', () => {
  it('stops reading an object past the size limit (64 MiB sent without a length): the worker refuses it for good', async () => {
    const total = 64 * 1024 * 1024;
    let pulled = 0;
    stub.handler = (_req, res) => {
      pulled = 0;
      res.writeHead(200, { 'content-type': 'application/pdf' }); // chunked: no size to check beforehand
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      Readable.from(
        (function* () {
          for (pulled = 0; pulled < total; pulled += chunk.length) yield chunk;
        })(),
      )
        .on('error', () => undefined)
        .pipe(res)
        .on('error', () => undefined);
    };
    const sdkStore = new S3ObjectStore(s3Client({ region: 'us-east-1', endpoint: stub.url }), 'esign-store', 'shared');
    const refused = await failure(upload(sdkStore, sha256));
    expect(refused).toMatchObject({ type: FailureType.InvalidDocument, nonRetryable: true });
    expect(refused.message).toBe(`documents[0]: the stored uploads/${sha256}.pdf is over the ${MAX}-byte limit`);
    expect(pulled).toBeLessThan(total / 2);

    // The client package's own store is held to the same bound.
    const httpStore = new S3HttpObjectStore(
      new S3HttpClient({ endpoint: stub.url, credentials: { accessKeyId: 'TEST', secretAccessKey: 'TEST' } }),
      'esign-store',
      'shared',
    );
    await expect(httpStore.get(documentObjectKey(sha256), { maxBytes: MAX })).rejects.toBeInstanceOf(ObjectRefused);
    expect(pulled).toBeLessThan(total / 2);
  });

  it("never addresses another bucket or object than the one named: a prefix with '..' is refused before any request", async () => {
    stub.requests.length = 0;
    stub.handler = (_req, res) => {
      res.writeHead(200);
      res.end();
    };
    const client = new S3HttpClient({ endpoint: stub.url, credentials: { accessKeyId: 'TEST', secretAccessKey: 'TEST' } });
    // Path-style, a URL resolves `esign-store/shared/../../victim/…` to the bucket `victim`.
    const escaping = new S3HttpObjectStore(client, 'esign-store', 'shared/../../victim');
    await expect(uploadDocument(escaping, pdf)).rejects.toThrow(/has a \. or \.\. segment/);
    await expect(client.getObject('esign-store', 'a/../../victim/manifest.json')).rejects.toThrow(/has a \. or \.\. segment/);
    await expect(client.getObject('..', 'victim/manifest.json')).rejects.toThrow(/not an S3 bucket name/);
    expect(stub.requests).toEqual([]);
  });
});
