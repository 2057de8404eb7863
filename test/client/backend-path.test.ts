// A backend's whole path (issue 40), from a machine that shares no disk with the worker: it puts its PDF in the
// workers' object store with the client package's `uploadDocument` (over S3, signed by the package's own SigV4
// client, no AWS SDK), names it `{object: {sha256}}`, and fetches the signed archive with `downloadArchive`. Real
// parts throughout: the Temporal dev server, the provider sandbox over HTTP, an S3-compatible server (s3rver, which
// checks every request's signature) holding both the documents and the archive, and a worker reading them through
// its usual stores.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ArchiveStore } from '../../src/archive/s3-store.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { ArchiveDownloadRefused, downloadArchive } from '../../src/client/archive.js';
import { DocumentRefused, objectStoreFromEnv, uploadDocument } from '../../src/client/documents.js';
import { esignCompletedSignal, type EsignTransactionResult } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { documentObjectKey } from '../../src/storage/documents.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { S3HttpClient, S3HttpObjectStore, signV4 } from '../../src/storage/s3-http.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { sandboxEvidencePolicy } from '../support/sandbox.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { uniqueTaskQueue } from '../support/temporal.js';

const BUCKET = 'esign-store';
let s3: TestS3;
let env: EsignTestEnv;
/** The backend's side: the package's S3 client, configured from the workers' variables. */
let backendEnv: NodeJS.ProcessEnv;
let out: string;

beforeAll(async () => {
  s3 = await startS3(BUCKET);
  backendEnv = {
    ESIGN_TEMPLATE_STORE: `s3://${BUCKET}/shared`,
    ESIGN_ARCHIVE_S3_ENDPOINT: s3.endpoint,
    ESIGN_ARCHIVE_S3_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID!,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY!,
  };
  env = await startEsignTestEnv({
    deps: {
      // The worker's own stores, over the AWS SDK: documents where ESIGN_TEMPLATE_STORE is, the archive beside them.
      objects: new S3ObjectStore(s3.client, BUCKET, 'shared'),
      archive: new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'archive' }),
      // Nothing on the worker's disk is readable as a document: the backend's files are not there.
      documentRoots: [],
    },
  });
  out = await mkdtemp(join(tmpdir(), 'esign-backend-out-'));
}, 60_000);
afterAll(async () => {
  await env?.close();
  await s3?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

const tags = [{ type: 'SIGNATURETEMPLATE' as const, x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }];

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const failure = (err as WorkflowFailedError).cause?.cause;
  expect(failure).toBeInstanceOf(ApplicationFailure);
  return failure as ApplicationFailure;
}

describe("a backend's whole path", () => {
  let result: EsignTransactionResult;
  let sha256: string;

  it('uploads a PDF to the object store, and the transaction naming it by SHA-256 is signed and archived', async () => {
    const store = objectStoreFromEnv(backendEnv)!;
    expect(store).toBeInstanceOf(S3HttpObjectStore);
    const pdf = Buffer.from(await samplePdf('Uploaded by a backend'));
    const uploaded = await uploadDocument(store, pdf);
    sha256 = createHash('sha256').update(pdf).digest('hex');
    expect(uploaded).toEqual({ source: { object: { sha256 } }, sha256, bytes: pdf.length, key: `uploads/${sha256}.pdf` });
    // Where the worker's own (AWS SDK) store finds it.
    expect(await new S3ObjectStore(s3.client, BUCKET, 'shared').get(documentObjectKey(sha256))).toEqual(pdf);

    const { handle } = await env.start(env.input({ documents: [{ title: 'Contract', source: uploaded.source, tags }] }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
    result = await handle.result();
    expect(result.status).toBe('completed');
    // The provider signed exactly the bytes stored: the hash the input named is the evidence's original.
    expect(Object.values(result.originals ?? {})).toEqual([sha256]);
    expect(result.archive!.evidence!.documents.map((d) => d.originalSha256)).toEqual([sha256]);
    expect(result.archive!.uri).toMatch(new RegExp(`^s3://${BUCKET}/archive/`));
  });

  it('downloads the archive from S3: the ZIP and its manifest, checked against the result', async () => {
    const dir = join(out, 'from-s3');
    const downloaded = await downloadArchive(result, dir, { env: backendEnv });
    expect(downloaded).toMatchObject({
      zip: join(dir, 'completed.zip'),
      manifest: join(dir, 'manifest.json'),
      sha256: result.archive!.sha256,
    });
    expect((await readdir(dir)).sort()).toEqual(['completed.zip', 'manifest.json']);
    const zip = await readFile(downloaded.zip);
    expect(createHash('sha256').update(zip).digest('hex')).toBe(result.archive!.sha256);
    const manifest = JSON.parse(await readFile(downloaded.manifest, 'utf8')) as typeof downloaded.contents;
    expect(manifest).toMatchObject({
      referenceId: result.referenceId,
      transactionId: result.transactionId,
      zip: { sha256: result.archive!.sha256 },
    });
    expect(manifest.documents.map((d) => d.sha256)).toEqual([sha256]);
  });

  it('refuses an archived ZIP whose bytes do not hash to the result, and keeps nothing', async () => {
    const key = new URL(result.archive!.uri).pathname.slice(1);
    const zip = await readFile(join(out, 'from-s3', 'completed.zip'));
    const altered = Buffer.from(zip);
    altered[altered.length - 30]! ^= 0xff;
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: altered }));
    const dir = join(out, 'tampered');
    const refused = await downloadArchive(result, dir, { s3: S3HttpClient.fromEnv(backendEnv) }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ArchiveDownloadRefused);
    expect(refused).toMatchObject({ reason: 'zip_mismatch' });
    expect((refused as Error).message).toContain(result.archive!.sha256);
    expect(await readdir(dir)).toEqual([]);
  });

  it('fails for good, before any upload to the provider, when the stored bytes are not those the SHA-256 names', async () => {
    const store = new S3HttpObjectStore(S3HttpClient.fromEnv(backendEnv), BUCKET, 'shared');
    const named = Buffer.from(await samplePdf('What the backend meant'));
    const namedSha = createHash('sha256').update(named).digest('hex');
    // Someone replaced the object: another PDF under the first one's key.
    await store.put(documentObjectKey(namedSha), Buffer.from(await samplePdf('Something else')));
    const before = await env.sandbox.control.stats();
    const { handle } = await env.start(env.input({ documents: [{ title: 'Contract', source: { object: { sha256: namedSha } }, tags }] }));
    const failure = await failureOf(handle.result());
    expect(failure.type).toBe(FailureType.InvalidDocument);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/documents\[0\]: the stored uploads\/[0-9a-f]{64}\.pdf does not match its SHA-256/);
    expect(await env.sandbox.control.stats()).toEqual(before);
  });

  it('fails for good with StoreNotConfigured on a worker without an object store', async () => {
    const taskQueue = uniqueTaskQueue('no-store');
    const worker = await createEsignWorker({
      connection: env.temporal.nativeConnection,
      namespace: env.temporal.namespace,
      taskQueue,
      deps: {
        client: env.sandbox.client,
        archive: new LocalArchiveStore(env.archiveDir),
        evidence: sandboxEvidencePolicy(env.sandbox),
        minReconcileInterval: '1 second',
      },
    });
    const running = worker.run();
    try {
      const before = await env.sandbox.control.stats();
      const { handle } = await env.start(env.input({ documents: [{ title: 'Contract', source: { object: { sha256 } }, tags }] }), {
        taskQueue,
      });
      const failure = await failureOf(handle.result());
      expect(failure.type).toBe(FailureType.StoreNotConfigured);
      expect(failure.message).toMatch(/documents\[0\] is in an object store, but this worker has none: set ESIGN_TEMPLATE_STORE/);
      expect(await env.sandbox.control.stats()).toEqual(before);
    } finally {
      worker.shutdown();
      await running;
    }
  });
});

describe("the package's S3 client", () => {
  // s3rver checks SigV4 signatures no further than the access key's id: the signer is held to AWS's own examples
  // (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "GET Object" and "PUT Object").
  it('signs requests as AWS documents Signature Version 4 for S3', async () => {
    const credentials = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
    const host = 'examplebucket.s3.amazonaws.com';
    const empty = createHash('sha256').digest('hex');
    const get = await signV4({
      method: 'GET',
      url: new URL(`https://${host}/test.txt`),
      headers: { host, range: 'bytes=0-9', 'x-amz-content-sha256': empty, 'x-amz-date': '20130524T000000Z' },
      payloadHash: empty,
      region: 'us-east-1',
      credentials,
    });
    expect(get).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    const body = createHash('sha256').update('Welcome to Amazon S3.').digest('hex');
    const put = await signV4({
      method: 'PUT',
      url: new URL(`https://${host}/test%24file.text`),
      headers: {
        host,
        date: 'Fri, 24 May 2013 00:00:00 GMT',
        'x-amz-storage-class': 'REDUCED_REDUNDANCY',
        'x-amz-content-sha256': body,
        'x-amz-date': '20130524T000000Z',
      },
      payloadHash: body,
      region: 'us-east-1',
      credentials,
    });
    expect(put).toMatch(/, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd$/);
  });
});

describe('uploadDocument and downloadArchive with a local store', () => {
  it('refuses what the worker would refuse, before storing anything', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-objects-'));
    try {
      const store = new LocalObjectStore(dir);
      const pdf = Buffer.from(await samplePdf('Local'));
      await expect(uploadDocument(store, Buffer.from('<html></html>'))).rejects.toMatchObject({ reason: 'not_pdf' });
      await expect(uploadDocument(store, Buffer.alloc(0))).rejects.toMatchObject({ reason: 'empty' });
      await expect(uploadDocument(store, pdf, { maxBytes: pdf.length - 1 })).rejects.toBeInstanceOf(DocumentRefused);
      expect(await readdir(dir)).toEqual([]);
      // A file on this machine, by its path.
      const file = join(dir, '..', `${Date.now()}-local.pdf`);
      await writeFile(file, pdf);
      const uploaded = await uploadDocument(store, file);
      await rm(file);
      expect(await store.get(uploaded.key)).toEqual(pdf);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('writes the ZIP and its manifest from a file:// archive, and refuses one whose ZIP does not match', async () => {
    const root = await mkdtemp(join(tmpdir(), 'esign-local-archive-'));
    try {
      const zip = Buffer.from('PK\x05\x06'.padEnd(22, '\0'), 'latin1');
      const sha = createHash('sha256').update(zip).digest('hex');
      const manifest = `${JSON.stringify({ referenceId: 'r-1', transactionId: 't-1', zip: { name: 'completed.zip', bytes: zip.length, sha256: sha } }, null, 2)}\n`;
      const archiveDir = join(root, 'store', 't-1');
      await mkdir(archiveDir, { recursive: true });
      await writeFile(join(archiveDir, 'completed.zip'), zip);
      await writeFile(join(archiveDir, 'manifest.json'), manifest);
      const archive = { uri: pathToFileURL(join(archiveDir, 'completed.zip')).href, sha256: sha, bytes: zip.length, files: [] };

      const got = await downloadArchive({ archive }, join(root, 'out'), { name: 'r-1' });
      expect(got).toMatchObject({ zip: join(root, 'out', 'r-1.zip'), manifest: join(root, 'out', 'r-1.manifest.json'), sha256: sha });
      expect(await readFile(got.zip)).toEqual(zip);
      expect(await readFile(got.manifest, 'utf8')).toBe(manifest);

      // The ZIP changed after it was archived.
      await writeFile(join(archiveDir, 'completed.zip'), Buffer.concat([zip, Buffer.from('x')]));
      await expect(downloadArchive({ archive }, join(root, 'bad'))).rejects.toMatchObject({ reason: 'zip_mismatch' });
      expect(await readdir(join(root, 'bad'))).toEqual([]);
      // A manifest of another ZIP.
      await writeFile(join(archiveDir, 'completed.zip'), zip);
      await writeFile(join(archiveDir, 'manifest.json'), manifest.replace(sha, 'f'.repeat(64)));
      await expect(downloadArchive({ archive }, join(root, 'bad'))).rejects.toMatchObject({ reason: 'manifest_mismatch' });
      // Nothing archived.
      await expect(downloadArchive({}, join(root, 'bad'))).rejects.toMatchObject({ reason: 'not_archived' });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
