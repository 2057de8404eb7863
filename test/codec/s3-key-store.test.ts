// The S3 key store: the contract every store keeps, over HTTP against a real S3-compatible server (s3rver), then what
// only its objects can show: their layout, no version of an erased key left in the bucket nor on the server's disk,
// an erasure that stopped half way finished by the next use, and the read cache.
//
// s3rver has no versioning and ignores conditional writes (If-None-Match and If-Match on a PUT are accepted and the
// object overwritten; ListObjectVersions is refused; a DELETE's versionId is ignored). So the store talks to it
// through a small proxy that makes it the bucket the store is written for: versioned, each version kept (in memory)
// and listed, the current one in s3rver; writes under If-None-Match: * and If-Match checked against the current
// version, one at a time for each object, and answered 412 when they do not hold, as S3 answers.
import { randomBytes, randomUUID, createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, ListObjectVersionsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3KeyStore } from '../../src/codec/s3-key-store.js';
import { KeyStoreExists } from '../../src/codec/key-store.js';
import { s3Client } from '../../src/storage/s3-client.js';
import { eventually } from '../support/eventually.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { describeKeyStoreContract, newRecord } from './key-store-contract.js';

const BUCKET = 'esign-keys';

interface Version {
  versionId: string;
  /** Undefined for a delete marker. */
  body?: Buffer;
  etag?: string;
  lastModified: Date;
}

interface VersionedBucket {
  /** A client that talks to the bucket through the proxy. */
  client: S3Client;
  /** Every version the bucket keeps of `key`, oldest first. */
  versions(key: string): Version[];
  /** Every version of every object. */
  all(): Map<string, Version[]>;
  /** Requests the proxy answered, by method (GET, PUT, DELETE). */
  requests: { method: string; path: string }[];
  /** Runs once, before the first request that `matches` is handled (to make another process's write land just then). */
  before(matches: (method: string, key: string, url: URL) => boolean, run: () => Promise<void>): void;
  close(): Promise<void>;
}

const unquote = (etag: string | undefined) => etag?.replace(/^W\//, '').replace(/"/g, '');
const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The proxy described at the top: s3rver made a versioned bucket that honours conditional writes. */
async function versionedBucket(s3: TestS3, bucket: string): Promise<VersionedBucket> {
  const upstream = new URL(s3.endpoint);
  const objects = new Map<string, Version[]>();
  const locks = new Map<string, Promise<unknown>>();
  const requests: { method: string; path: string }[] = [];
  const hooks: { matches: (method: string, key: string, url: URL) => boolean; run: () => Promise<void> }[] = [];

  /** One write at a time for each object: a condition checked and the write made with nothing in between. */
  const exclusive = <T>(key: string, write: () => Promise<T>): Promise<T> => {
    const next = (locks.get(key) ?? Promise.resolve()).then(write, write);
    locks.set(
      key,
      next.catch(() => undefined),
    );
    return next;
  };
  const fail = (res: ServerResponse, status: number, code: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code}</Message></Error>`);
  };
  const current = (key: string) => {
    const latest = objects.get(key)?.at(-1);
    return latest?.body ? latest : undefined;
  };
  /** Conditions of a write against the current version: the error S3 answers, or undefined when they hold. */
  const refused = (key: string, req: IncomingMessage): [number, string] | undefined => {
    const now = current(key);
    if (req.headers['if-none-match'] === '*' && now) return [412, 'PreconditionFailed'];
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && !now) return [404, 'NoSuchKey'];
    if (ifMatch !== undefined && unquote(ifMatch) !== unquote(now!.etag)) return [412, 'PreconditionFailed'];
    return undefined;
  };
  /** Makes s3rver hold the bucket's current version of `key` (or nothing, when it is none or a delete marker). */
  const publish = async (key: string) => {
    const now = current(key);
    if (now) await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: now.body }));
    else await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  };

  const put = async (key: string, req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (/aws-chunked/.test(String(req.headers['content-encoding'])) || /STREAMING/.test(String(req.headers['x-amz-content-sha256']))) {
      return fail(res, 501, 'NotImplemented');
    }
    const body = Buffer.concat(chunks);
    await exclusive(key, async () => {
      const no = refused(key, req);
      if (no) return fail(res, ...no);
      const version: Version = {
        versionId: randomUUID(),
        body,
        etag: `"${createHash('md5').update(body).digest('hex')}"`,
        lastModified: new Date(),
      };
      objects.set(key, [...(objects.get(key) ?? []), version]);
      await publish(key);
      res.writeHead(200, { etag: version.etag, 'x-amz-version-id': version.versionId });
      res.end();
    });
  };

  const remove = async (key: string, url: URL, req: IncomingMessage, res: ServerResponse) => {
    await exclusive(key, async () => {
      const versionId = url.searchParams.get('versionId');
      const list = objects.get(key) ?? [];
      if (versionId) {
        // One version, for good; the one before it becomes current if it was.
        objects.set(
          key,
          list.filter((v) => v.versionId !== versionId),
        );
        await publish(key);
        res.writeHead(204, { 'x-amz-version-id': versionId });
        return res.end();
      }
      const no = refused(key, req);
      if (no) return fail(res, ...no);
      // Without a version: a delete marker, the versions kept behind it.
      const marker: Version = { versionId: randomUUID(), lastModified: new Date() };
      objects.set(key, [...list, marker]);
      await publish(key);
      res.writeHead(204, { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId });
      res.end();
    });
  };

  const listVersions = (url: URL, res: ServerResponse) => {
    const prefix = url.searchParams.get('prefix') ?? '';
    const entries: string[] = [];
    for (const key of [...objects.keys()].filter((k) => k.startsWith(prefix)).sort()) {
      const list = objects.get(key)!;
      list.forEach((v, i) => {
        const common = `<Key>${xml(key)}</Key><VersionId>${v.versionId}</VersionId><IsLatest>${i === list.length - 1}</IsLatest><LastModified>${v.lastModified.toISOString()}</LastModified>`;
        entries.unshift(
          v.body
            ? `<Version>${common}<ETag>${xml(v.etag!)}</ETag><Size>${v.body.length}</Size><StorageClass>STANDARD</StorageClass></Version>`
            : `<DeleteMarker>${common}</DeleteMarker>`,
        );
      });
    }
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?>\n<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
        `<Name>${bucket}</Name><Prefix>${xml(prefix)}</Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${entries.join('')}</ListVersionsResult>`,
    );
  };

  /** Anything else (reads, listings) goes to s3rver as it came. */
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const { expect: _expect, ...headers } = req.headers;
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.statusMessage, answer.headers);
      answer.pipe(res);
    });
    out.on('error', (err) => res.destroy(err));
    req.pipe(out);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://proxy');
    requests.push({ method: req.method!, path: url.pathname });
    const key = url.pathname.startsWith(`/${bucket}/`) ? decodeURIComponent(url.pathname.slice(bucket.length + 2)) : '';
    const hook = hooks.findIndex((h) => h.matches(req.method!, key, url));
    if (hook >= 0) await hooks.splice(hook, 1)[0]!.run();
    const subresource = [...url.searchParams.keys()].some((name) => name !== 'x-id' && name !== 'versionId');
    if (req.method === 'GET' && !key && url.searchParams.has('versions')) return listVersions(url, res);
    if (req.method === 'PUT' && key && !subresource) return put(key, req, res);
    if (req.method === 'DELETE' && key && !subresource) return remove(key, url, req, res);
    return forward(req, res);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) fail(res, 500, `InternalError ${String(err)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = s3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  return {
    client,
    versions: (key) => [...(objects.get(key) ?? [])],
    all: () => objects,
    requests,
    before: (matches, run) => hooks.push({ matches, run }),
    async close() {
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let s3: TestS3;
let bucket: VersionedBucket;
/** Where s3rver keeps its objects on disk (the directory startS3 made, among any another test file made meanwhile). */
let s3rverDirs: string[];
const s3rverDirsNow = async () =>
  (await readdir(tmpdir())).filter((name) => name.startsWith('s3rver-')).map((name) => join(tmpdir(), name));

beforeAll(async () => {
  const before = new Set(await s3rverDirsNow());
  s3 = await startS3(BUCKET);
  s3rverDirs = (await s3rverDirsNow()).filter((dir) => !before.has(dir));
  bucket = await versionedBucket(s3, BUCKET);
});
afterAll(async () => {
  await bucket?.close();
  await s3?.close();
});

let prefixes = 0;
const storeAt = (prefix: string, options: { cacheMs?: number } = {}) =>
  new S3KeyStore({ client: bucket.client, bucket: BUCKET, prefix, ...options });

describeKeyStoreContract('S3KeyStore', async () => {
  const prefix = `contract-${++prefixes}/keys`;
  return { store: storeAt(prefix), reopen: async () => storeAt(prefix), cleanup: async () => undefined };
});

/** Whether any file s3rver keeps on disk holds `needle`. */
async function onDisk(needle: string): Promise<boolean> {
  for (const dir of s3rverDirs) {
    // Another test file's server may be gone meanwhile: only this file's holds the bytes looked for.
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
      if (!entry.isFile()) continue;
      const bytes = await readFile(join(entry.parentPath, entry.name)).catch(() => Buffer.alloc(0));
      if (bytes.includes(needle)) return true;
    }
  }
  return false;
}

async function rawJson(key: string): Promise<unknown> {
  const res = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return JSON.parse(await res.Body!.transformToString('utf8'));
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const inAnyVersion = (needle: string) =>
  [...bucket.all()].filter(([, versions]) => versions.some((v) => v.body?.includes(needle))).map(([key]) => key);

describe('S3KeyStore objects', () => {
  it('keeps store.json, a record a key (base64), and a pointer a subject under its prefix', async () => {
    const store = storeAt('layout/keys/');
    expect(store.location).toBe(`s3://${BUCKET}/layout/keys`);
    const identity = await store.init();
    expect(await rawJson('layout/keys/store.json')).toEqual(identity);
    const record = newRecord('esign-acme/ref-1');
    await store.create(record);
    expect(await rawJson(`layout/keys/keys/${record.id}.json`)).toEqual({
      id: record.id,
      subject: 'esign-acme/ref-1',
      wrapped: record.wrapped.toString('base64'),
      masterKeyId: 'm1',
      createdAt: record.createdAt,
    });
    expect(await rawJson(`layout/keys/subjects/${sha256('esign-acme/ref-1')}.json`)).toEqual({ id: record.id });

    // At the bucket's root.
    const root = storeAt('');
    expect(root.location).toBe(`s3://${BUCKET}`);
    await root.init();
    await root.create(newRecord('esign-root'));
    expect(await rawJson('store.json')).toEqual(await root.open());

    // Records without store.json are a lost store: restored, not replaced.
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'lost/keys/dk.x.json', Body: '{}' }));
    await expect(storeAt('lost').init()).rejects.toBeInstanceOf(KeyStoreExists);
    await expect(storeAt('lost').init()).rejects.toThrow(/holds data keys but no store\.json: restore the store from its backup/);
  });

  it('leaves no version of an erased key in the bucket, nor its bytes on the server’s disk', async () => {
    const prefix = 'shred';
    const store = storeAt(prefix);
    await store.init();
    const record = newRecord('esign-shred', randomBytes(64));
    const other = newRecord('esign-kept');
    await store.create(record);
    await store.create(other);
    const keyName = `${prefix}/keys/${record.id}.json`;
    const pointerName = `${prefix}/subjects/${sha256('esign-shred')}.json`;
    // A second version with other bytes: what a rewrap stopped before removing the version it replaced leaves.
    const older = record.wrapped.toString('base64');
    const newer = randomBytes(60).toString('base64');
    await bucket.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: keyName,
        Body: JSON.stringify({ ...((await rawJson(keyName)) as object), wrapped: newer }),
      }),
    );
    expect(bucket.versions(keyName)).toHaveLength(2);
    expect(inAnyVersion(older)).toEqual([keyName]);
    expect(inAnyVersion(newer)).toEqual([keyName]);
    expect(await onDisk(newer)).toBe(true);

    const [tombstone] = await store.erase('esign-shred', '2026-02-01T00:00:00.000Z', 'dpo:kim');
    expect(tombstone).toMatchObject({ id: record.id, erasedBy: 'dpo:kim' });
    // The record's one version left is its tombstone; the pointer is gone with every version of it.
    const left = bucket.versions(keyName);
    expect(left).toHaveLength(1);
    expect(JSON.parse(left[0]!.body!.toString('utf8'))).toEqual({
      id: record.id,
      subject: 'esign-shred',
      masterKeyId: 'm1',
      createdAt: record.createdAt,
      erasedAt: '2026-02-01T00:00:00.000Z',
      erasedBy: 'dpo:kim',
    });
    expect(bucket.versions(pointerName)).toEqual([]);
    const listed = await bucket.client.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: `${prefix}/` }));
    expect((listed.Versions ?? []).map((v) => v.Key).sort()).toEqual(
      [`${prefix}/store.json`, keyName, `${prefix}/keys/${other.id}.json`, `${prefix}/subjects/${sha256('esign-kept')}.json`].sort(),
    );
    expect(listed.DeleteMarkers ?? []).toEqual([]);
    expect(inAnyVersion(older)).toEqual([]);
    expect(inAnyVersion(newer)).toEqual([]);
    expect(await onDisk(older)).toBe(false);
    expect(await onDisk(newer)).toBe(false);
    // The other subject's key, untouched.
    expect(await onDisk(other.wrapped.toString('base64'))).toBe(true);
    expect(await store.current('esign-kept')).toEqual(other);
  });

  it('keeps no version of a rewrapped key under the master key it leaves', async () => {
    const store = storeAt('rotate');
    await store.init();
    const record = newRecord('esign-rotate');
    await store.create(record);
    const replaced = randomBytes(60);
    await store.rewrap(record.id, replaced, 'm2');
    const versions = bucket.versions(`rotate/keys/${record.id}.json`);
    expect(versions).toHaveLength(1);
    expect(versions[0]!.body!.includes(replaced.toString('base64'))).toBe(true);
    expect(inAnyVersion(record.wrapped.toString('base64'))).toEqual([]);
  });

  it('finishes an erasure that stopped before removing the pointer: the next key, or the erasure run again', async () => {
    const store = storeAt('interrupted');
    const other = storeAt('interrupted');
    await store.init();
    const pointerName = `interrupted/subjects/${sha256('esign-a')}.json`;
    /** What an erasure that stopped after writing its tombstone leaves: the tombstone, and the pointer to it. */
    const interrupted = async (subject: string) => {
      const record = newRecord(subject);
      await store.create(record);
      const { wrapped: _gone, ...kept } = record;
      await bucket.client.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `interrupted/keys/${record.id}.json`,
          Body: JSON.stringify({ ...kept, erasedAt: '2026-02-01T00:00:00.000Z', erasedBy: 'dpo:kim' }),
        }),
      );
      return record;
    };

    const a = await interrupted('esign-a');
    expect(await rawJson(pointerName)).toEqual({ id: a.id });
    expect(await store.current('esign-a')).toBeUndefined();
    // Processes that make the subject's next key at once replace the pointer once, each only as it read it.
    const asked = Array.from({ length: 12 }, () => newRecord('esign-a'));
    const stood = await Promise.all(asked.map((r, i) => (i % 2 ? other : store).create(r)));
    expect(new Set(stood.map((r) => r.id)).size).toBe(1);
    expect(asked.map((r) => r.id)).toContain(stood[0]!.id);
    expect(await rawJson(pointerName)).toEqual({ id: stood[0]!.id });
    expect(await other.current('esign-a')).toEqual(stood[0]);
    expect((await store.get(a.id))?.wrapped).toBeUndefined();

    // Run again, the erasure has nothing left to erase, and leaves neither the pointer nor an earlier version.
    const b = await interrupted('esign-b');
    expect(await store.erase('esign-b', '2026-02-02T00:00:00.000Z', 'dpo:kim')).toEqual([]);
    expect(bucket.versions(`interrupted/subjects/${sha256('esign-b')}.json`)).toEqual([]);
    expect(bucket.versions(`interrupted/keys/${b.id}.json`)).toHaveLength(1);
    expect(inAnyVersion(b.wrapped.toString('base64'))).toEqual([]);
  });

  it('an erasure leaves a pointer another process wrote meanwhile', async () => {
    const store = storeAt('meanwhile');
    await store.init();
    const a = newRecord('esign-a');
    await store.create(a);
    const pointerName = `meanwhile/subjects/${sha256('esign-a')}.json`;
    // Between the erasure's reading the pointer and deleting it, the pointer is replaced (a next key made): the
    // conditional delete refuses, and the pointer that stands now is kept.
    const b = newRecord('esign-a');
    await bucket.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `meanwhile/keys/${b.id}.json`,
        Body: JSON.stringify({ ...b, wrapped: b.wrapped.toString('base64') }),
      }),
    );
    let replaced = false;
    bucket.before(
      (method, key, url) => method === 'DELETE' && key === pointerName && !url.searchParams.has('versionId'),
      async () => {
        await bucket.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: pointerName, Body: JSON.stringify({ id: b.id }) }));
        replaced = true;
      },
    );
    expect(await store.erase('esign-a', '2026-02-01T00:00:00.000Z', 'dpo:kim')).toMatchObject([{ id: a.id }]);
    expect(replaced).toBe(true);
    expect(await rawJson(pointerName)).toEqual({ id: b.id });
    expect(await store.current('esign-a')).toEqual(b);
    expect((await store.get(a.id))?.wrapped).toBeUndefined();
  });

  it('caches reads for cacheMs; an erasure in this process empties the cache at once', async () => {
    const writer = storeAt('cached');
    await writer.init();
    const reader = storeAt('cached', { cacheMs: 60_000 });
    const a = newRecord('esign-a');
    const b = newRecord('esign-b');
    await writer.create(a);
    await writer.create(b);
    expect(await reader.current('esign-a')).toEqual(a);
    expect(await reader.get(b.id)).toEqual(b);
    const reads = bucket.requests.length;
    expect(await reader.current('esign-a')).toEqual(a);
    expect(await reader.get(b.id)).toEqual(b);
    expect(await reader.get(a.id)).toEqual(a);
    expect(bucket.requests.length).toBe(reads);

    // Erased by another process: this one still answers from its cache.
    await writer.erase('esign-a', '2026-02-01T00:00:00.000Z', 'dpo:kim');
    expect(await reader.current('esign-a')).toEqual(a);
    // Erased here: at once.
    await reader.erase('esign-b', '2026-02-01T00:00:00.000Z', 'dpo:kim');
    expect(await reader.current('esign-a')).toBeUndefined();
    expect((await reader.get(a.id))?.wrapped).toBeUndefined();
    expect((await reader.get(b.id))?.wrapped).toBeUndefined();

    // A short cache sees another process's erasure once it expires.
    const brief = storeAt('cached', { cacheMs: 200 });
    const c = newRecord('esign-c');
    await writer.create(c);
    expect(await brief.current('esign-c')).toEqual(c);
    await writer.erase('esign-c', '2026-02-01T00:00:00.000Z', 'dpo:kim');
    await eventually('the cache to expire', async () => (await brief.current('esign-c')) === undefined, 5_000);
  });

  it('needs the proxy: s3rver alone ignores conditional writes and has no versions', async () => {
    const key = `alone/${randomUUID()}.json`;
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'first', IfNoneMatch: '*' }));
    // Accepted, and the first overwritten: with s3rver alone, two processes could both win a subject.
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'second', IfNoneMatch: '*' }));
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'third', IfMatch: '"not-its-etag"' }));
    const res = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    expect(await res.Body!.transformToString()).toBe('third');
    await expect(s3.client.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: 'alone/' }))).rejects.toThrow();
    // Through the proxy, as S3 answers.
    const proxied = `alone/${randomUUID()}.json`;
    await bucket.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: proxied, Body: 'first', IfNoneMatch: '*' }));
    await expect(
      bucket.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: proxied, Body: 'x', IfNoneMatch: '*' })),
    ).rejects.toMatchObject({
      name: 'PreconditionFailed',
      $metadata: { httpStatusCode: 412 },
    });
    await expect(
      bucket.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: proxied, Body: 'x', IfMatch: '"not-its-etag"' })),
    ).rejects.toMatchObject({
      name: 'PreconditionFailed',
    });
  });
});
