// The archive stores, local and S3-compatible (a real s3rver over HTTP), as the evidence upkeep uses them: the
// keys of committed archives, a file's bytes, and a renewal committed beside the untouched completed.zip with the
// manifest as its commit point. Then S3 Object Lock, whose headers s3rver ignores: a pass-through proxy in front
// of it records each request as it went over the wire. And the worker settings that turn Object Lock on.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { S3ArchiveStore } from '../../src/archive/s3-store.js';
import {
  LocalArchiveStore,
  type ArchiveManifest,
  type ArchiveStore,
  type EvidenceRenewal,
  type RenewalFiles,
  PurgeRefused,
} from '../../src/archive/store.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { startS3, type RecordedRequest, type TestS3 } from '../support/s3.js';
import type { LegalHold } from '../../src/definitions/records.js';
import { retentionOf, tombstoneOf } from '../../src/records/retention.js';

const BUCKET = 'signed-documents';
const hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const b64 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');

interface Harness {
  store: ArchiveStore;
  /** Leaves what an interrupted commit leaves: for the local store a staged archive and a ZIP alone, for S3 a ZIP alone. */
  partial(key: string): Promise<void>;
  /** Writes `<key>/<file>` straight into the storage, as a crashed attempt would have left it. */
  put(key: string, file: string, bytes: Buffer): Promise<void>;
  /** `<key>/<file>` straight from the storage. */
  raw(key: string, file: string): Promise<Buffer>;
  /** Changes whenever anything is written. */
  fingerprint(): Promise<string>;
  close(): Promise<void>;
}

async function localHarness(): Promise<Harness> {
  const root = await mkdtemp(join(tmpdir(), 'archive-store-'));
  const store = new LocalArchiveStore(root);
  const put = async (key: string, file: string, bytes: Buffer) => {
    await mkdir(dirname(join(root, key, file)), { recursive: true });
    await writeFile(join(root, key, file), bytes);
  };
  return {
    store,
    async partial(key) {
      // A commit between writing its staging directory and publishing it…
      const staged = join(await store.scratchDir(), `${key.replace(/\//g, '_')}.0000`);
      await mkdir(staged, { recursive: true });
      await writeFile(join(staged, 'completed.zip'), 'staged');
      await writeFile(join(staged, 'manifest.json'), '{}');
      // …and a directory holding a ZIP and no manifest.
      await put(key, 'completed.zip', Buffer.from('partial'));
    },
    put,
    raw: (key, file) => readFile(join(root, key, file)),
    async fingerprint() {
      const entries = await readdir(root, { recursive: true, withFileTypes: true });
      const files = await Promise.all(
        entries
          .filter((e) => e.isFile())
          .map(async (e) => {
            const path = join(e.parentPath, e.name);
            const s = await stat(path, { bigint: true });
            return `${path} ${s.mtimeNs} ${s.ino} ${hex(await readFile(path))}`;
          }),
      );
      return files.sort().join('\n');
    },
    close: () => rm(root, { recursive: true, force: true }),
  };
}

async function s3Harness(): Promise<Harness & { s3: TestS3 }> {
  const s3 = await startS3(BUCKET, { record: true });
  // One page: s3rver lists in the order it walks its directories ('acme/…' before 'acme-eu/…'), not in S3's.
  const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign' });
  const put = async (key: string, file: string, bytes: Buffer) => {
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `esign/${key}/${file}`, Body: bytes }));
  };
  // Manifests outside the store's prefix, one under a prefix that merely starts like it.
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'elsewhere/tx-0/manifest.json', Body: '{}' }));
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'esign-other/tx-0/manifest.json', Body: '{}' }));
  return {
    s3,
    store,
    partial: (key) => put(key, 'completed.zip', Buffer.from('partial')),
    put,
    async raw(key, file) {
      const res = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `esign/${key}/${file}` }));
      return Buffer.from(await res.Body!.transformToByteArray());
    },
    fingerprint: async () => JSON.stringify(s3.requests.filter((r) => r.method !== 'GET' && r.method !== 'HEAD').map((r) => r.url)),
    close: () => s3.close(),
  };
}

function manifestFor(key: string, zip: Buffer): ArchiveManifest {
  return {
    referenceId: `ref-${key}`,
    transactionId: key.split('/').at(-1)!,
    esignId: 'es-1',
    zip: { name: 'completed.zip', bytes: zip.length, sha256: hex(zip) },
    documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf' }],
    files: [{ name: 'Contract.pdf', bytes: 100, sha256: '0'.repeat(64) }],
    downloadedAt: '2026-01-01T00:00:00.000Z',
    archivedAt: '2026-01-01T00:00:01.000Z',
  };
}

/** Commits an archive whose completed.zip holds random bytes; returns them. */
async function commit(store: ArchiveStore, key: string, size = 2048): Promise<Buffer> {
  const zip = randomBytes(size);
  const path = join(await mkdtemp(join(tmpdir(), 'archive-zip-')), 'completed.zip');
  await writeFile(path, zip);
  await store.commit(key, path, manifestFor(key, zip));
  return zip;
}

/** Renewal `id` of `entries` (fresh bytes each), and `manifest` with it appended. */
function renewal(manifest: ArchiveManifest, id: number, entries: string[], asOf = '2030-01-01T00:00:00.000Z') {
  const files = entries.map((entry) => ({ entry, name: `renewals/${id}/${entry}`, bytes: randomBytes(512) }));
  const record: EvidenceRenewal = {
    id,
    asOf,
    reason: 'expiring',
    documents: files.map((f) => ({
      entry: f.entry,
      file: f.name,
      bytes: f.bytes.length,
      sha256: hex(f.bytes),
      extends: '0'.repeat(64),
      timestampedAt: asOf,
      evidenceExpiresAt: '2040-01-01T00:00:00.000Z',
    })),
  };
  const renewalFiles: RenewalFiles = { id, files: files.map(({ name, bytes }) => ({ name, bytes })) };
  return { files: renewalFiles, manifest: { ...manifest, renewals: [...(manifest.renewals ?? []), record] } };
}

async function keysOf(store: ArchiveStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of store.keys()) keys.push(key);
  return keys;
}

describe.each([
  ['LocalArchiveStore', localHarness],
  ['S3ArchiveStore', s3Harness],
] as const)('%s', (_name, start) => {
  let h: Harness;
  beforeEach(async () => {
    h = await start();
  });
  afterEach(() => h?.close());

  it('lists the key of every committed archive, in key order, and nothing staged or partial', async () => {
    expect(await keysOf(h.store)).toEqual([]);
    for (const key of ['tx-b', 'acme/tx-2', 'acme/tx-1', 'acme-eu/tx-9', 'acme.old/tx-0']) await commit(h.store, key);
    await h.partial('acme/tx-partial');
    await h.partial('zz-partial');
    // JavaScript string order ('-' and '.' sort before '/'), whatever order the storage lists or walks in.
    expect(await keysOf(h.store)).toEqual(['acme-eu/tx-9', 'acme.old/tx-0', 'acme/tx-1', 'acme/tx-2', 'tx-b']);
  });

  it('reads completed.zip and renewal files, refuses a path that leaves the archive, and names what is missing', async () => {
    const zip = await commit(h.store, 'acme/tx-1');
    await commit(h.store, 'acme/tx-2');
    expect((await h.store.read('acme/tx-1', 'completed.zip')).equals(zip)).toBe(true);
    for (const file of [
      '../tx-2/completed.zip',
      '/etc/passwd',
      'renewals/../../tx-2/completed.zip',
      '',
      'renewals//a.pdf',
      './completed.zip',
      'a\\b',
    ]) {
      await expect(h.store.read('acme/tx-1', file), file).rejects.toThrow(/invalid file .* relative path inside the archive/);
    }
    await expect(h.store.read('acme/tx-1', 'renewals/1/Contract.pdf')).rejects.toThrow(
      'archive acme/tx-1 has no file renewals/1/Contract.pdf',
    );
    await expect(h.store.read('acme/tx-9', 'completed.zip')).rejects.toThrow('archive acme/tx-9 has no file completed.zip');
    await expect(h.store.read('acme/tx-1', 'renewals')).rejects.toThrow('archive acme/tx-1 has no file renewals');
  });

  it('commits a renewal beside the untouched ZIP, once per id, and appends the next', async () => {
    const key = 'acme/tx-1';
    const zip = await commit(h.store, key);
    const stored = (await h.store.find(key))!;

    const first = renewal(stored.manifest, 1, ['Contract.pdf', 'evidence/certificate-of-completion.pdf']);
    const committed = await h.store.commitRenewal(key, first.files, first.manifest);
    expect(committed).toEqual({ uri: stored.uri, manifest: first.manifest });
    expect((await h.store.find(key))!.manifest).toEqual(first.manifest);
    for (const f of first.files.files) expect((await h.store.read(key, f.name)).equals(f.bytes), f.name).toBe(true);
    expect((await h.raw(key, 'completed.zip')).equals(zip)).toBe(true);
    expect(await keysOf(h.store)).toEqual([key]);

    // The same id again (a retry, a replay): the stored archive as it is, and nothing written.
    const before = await h.fingerprint();
    const again = renewal(stored.manifest, 1, ['Contract.pdf'], '2031-01-01T00:00:00.000Z');
    expect(await h.store.commitRenewal(key, again.files, again.manifest)).toEqual({ uri: stored.uri, manifest: first.manifest });
    expect(await h.fingerprint()).toBe(before);
    expect((await h.store.read(key, 'renewals/1/Contract.pdf')).equals(first.files.files[0]!.bytes)).toBe(true);

    // The next renewal is appended; the first one's files stay as they were.
    const second = renewal(first.manifest, 2, ['Contract.pdf']);
    await h.store.commitRenewal(key, second.files, second.manifest);
    const after = (await h.store.find(key))!.manifest;
    expect(after.renewals?.map((r) => r.id)).toEqual([1, 2]);
    expect(after).toEqual(second.manifest);
    expect((await h.store.read(key, 'renewals/2/Contract.pdf')).equals(second.files.files[0]!.bytes)).toBe(true);
    for (const f of first.files.files) expect((await h.store.read(key, f.name)).equals(f.bytes), f.name).toBe(true);
    expect((await h.raw(key, 'completed.zip')).equals(zip)).toBe(true);
    expect(await keysOf(h.store)).toEqual([key]);
  });

  it('refuses a renewal that writes outside renewals/<id>/ or does not append to the stored manifest, writing nothing', async () => {
    const key = 'acme/tx-1';
    const zip = await commit(h.store, key);
    const { manifest } = (await h.store.find(key))!;
    const good = renewal(manifest, 1, ['Contract.pdf']);
    const before = await h.fingerprint();
    const bytes = Buffer.from('renewed');
    for (const [name, error] of [
      ['completed.zip', /may only write under renewals\/1\//],
      ['manifest.json', /may only write under renewals\/1\//],
      ['renewals/2/Contract.pdf', /may only write under renewals\/1\//],
      ['renewals/1/../../completed.zip', /invalid file/],
      ['/renewals/1/Contract.pdf', /invalid file/],
    ] as const) {
      await expect(h.store.commitRenewal(key, { id: 1, files: [{ name, bytes }] }, good.manifest), name).rejects.toThrow(error);
    }
    const twice = { id: 1, files: [...good.files.files, ...good.files.files] };
    await expect(h.store.commitRenewal(key, twice, good.manifest)).rejects.toThrow(/writes renewals\/1\/Contract.pdf twice/);
    await expect(h.store.commitRenewal(key, { id: 0, files: [] }, good.manifest)).rejects.toThrow(/invalid renewal id 0/);
    // The manifest must be the stored one with this renewal appended, naming only the files it writes.
    await expect(h.store.commitRenewal(key, good.files, manifest)).rejects.toThrow(/must be the stored ones \[\] followed by 1/);
    await expect(h.store.commitRenewal(key, good.files, renewal(manifest, 2, ['Contract.pdf']).manifest)).rejects.toThrow(/followed by 1/);
    await expect(h.store.commitRenewal(key, { id: 1, files: [] }, good.manifest)).rejects.toThrow(
      /names files the renewal does not write: renewals\/1\/Contract.pdf/,
    );
    const otherZip = { ...good.manifest, zip: { ...good.manifest.zip, sha256: 'f'.repeat(64) } };
    await expect(h.store.commitRenewal(key, good.files, otherZip)).rejects.toThrow(/not the stored archive's/);
    await expect(h.store.commitRenewal('acme/tx-9', good.files, good.manifest)).rejects.toThrow('no archive acme/tx-9');
    expect(await h.fingerprint()).toBe(before);
    expect((await h.raw(key, 'completed.zip')).equals(zip)).toBe(true);
  });

  it('counts a renewal only once its manifest is written: files left by a crash are rewritten by the retry', async () => {
    const key = 'acme/tx-1';
    const zip = await commit(h.store, key);
    const { manifest } = (await h.store.find(key))!;
    // An attempt that crashed after writing a file, before the manifest.
    await h.put(key, 'renewals/1/Contract.pdf', Buffer.from('half written'));
    expect((await h.store.find(key))!.manifest.renewals).toBeUndefined();
    expect(await keysOf(h.store)).toEqual([key]);

    const retry = renewal(manifest, 1, ['Contract.pdf']);
    await h.store.commitRenewal(key, retry.files, retry.manifest);
    expect((await h.store.read(key, 'renewals/1/Contract.pdf')).equals(retry.files.files[0]!.bytes)).toBe(true);
    expect((await h.store.find(key))!.manifest.renewals?.map((r) => r.id)).toEqual([1]);
    expect((await h.raw(key, 'completed.zip')).equals(zip)).toBe(true);
  });

  it('purges past its retention: the tombstone first, then the ZIP and renewals; never early, never under a hold', async () => {
    const key = 'acme/tx-7';
    const zip = randomBytes(2048);
    const path = join(await mkdtemp(join(tmpdir(), 'archive-zip-')), 'completed.zip');
    await writeFile(path, zip);
    const retained = {
      ...manifestFor(key, zip),
      batchId: 'bulk-1',
      retention: retentionOf('2026-01-01T00:00:01.000Z', '1 year', 'worker'),
    };
    await h.store.commit(key, path, retained);
    const next = renewal(retained, 1, ['Contract.pdf']);
    await h.store.commitRenewal(key, next.files, next.manifest);
    const stored = (await h.store.find(key))!.manifest;

    await expect(h.store.purge(key, tombstoneOf(stored, '2026-06-01T00:00:00.000Z'), [])).rejects.toBeInstanceOf(PurgeRefused);
    const hold: LegalHold = {
      id: 'hold-1',
      scope: 'reference',
      target: `ref-${key}`,
      reason: 'matter',
      by: 'legal',
      placedAt: '2026-01-02T00:00:00.000Z',
    };
    const due = tombstoneOf(stored, '2027-01-03T00:00:00.000Z');
    await expect(h.store.purge(key, due, [hold])).rejects.toThrow(/held: hold-1 \(matter\)/);
    expect(Buffer.from(await h.store.read(key, 'completed.zip')).equals(zip)).toBe(true);
    // A hold on a batch keeps what its manifest says came from that batch, and nothing else.
    await expect(h.store.purge(key, due, [{ ...hold, id: 'hold-2', scope: 'batch', target: 'bulk-1' }])).rejects.toThrow(/held: hold-2/);
    const other: LegalHold = { ...hold, id: 'hold-3', scope: 'batch', target: 'bulk-2' };

    await h.store.purge(key, due, [other, { ...hold, released: { at: '2027-01-02T00:00:00.000Z', by: 'legal', reason: 'settled' } }]);
    const tombstone = (await h.store.find(key))!.manifest;
    expect(tombstone.purged?.at).toBe('2027-01-03T00:00:00.000Z');
    expect(tombstone.documents).toEqual([]);
    expect(tombstone.renewals).toBeUndefined();
    await expect(h.store.read(key, 'completed.zip')).rejects.toThrow(`archive ${key} has no file completed.zip`);
    await expect(h.store.read(key, next.files.files[0]!.name)).rejects.toThrow('has no file');
    // Still listed, as a tombstone; a purge again changes nothing.
    expect(await keysOf(h.store)).toEqual([key]);
    await h.store.purge(key, tombstone, []);
    expect((await h.store.find(key))!.manifest).toEqual(tombstone);
  });

  it('refuses a renewal read before a purge and committed after it: the tombstone stands, nothing personal comes back', async () => {
    const key = 'acme/tx-8';
    const zip = randomBytes(1024);
    const path = join(await mkdtemp(join(tmpdir(), 'archive-zip-')), 'completed.zip');
    await writeFile(path, zip);
    const retained = { ...manifestFor(key, zip), retention: retentionOf('2026-01-01T00:00:01.000Z', '1 year', 'worker') };
    await h.store.commit(key, path, retained);
    // The upkeep read the archive and made its renewal; the retention purged it meanwhile.
    const late = renewal(retained, 1, ['Contract.pdf']);
    await h.store.purge(key, tombstoneOf(retained, '2027-01-03T00:00:00.000Z'), []);
    const tombstone = (await h.store.find(key))!.manifest;
    await expect(h.store.commitRenewal(key, late.files, late.manifest)).rejects.toThrow(
      `cannot record renewal 1 of archive ${key}: it was purged at 2027-01-03T00:00:00.000Z (its tombstone stands)`,
    );
    expect((await h.store.find(key))!.manifest).toEqual(tombstone);
    await expect(h.store.read(key, 'renewals/1/Contract.pdf')).rejects.toThrow('has no file');
  });

  it('holds no object itself, so a legal hold changes nothing here: the register, which a purge consults, is the guard', async () => {
    const key = 'acme/tx-1';
    await commit(h.store, key);
    const before = await h.fingerprint();
    expect(h.store.holdsObjects).toBe(false);
    await h.store.applyLegalHold(key, true);
    await h.store.applyLegalHold(key, false);
    await h.store.applyLegalHold('acme/tx-none', true);
    expect(await h.fingerprint()).toBe(before);
  });

  it('does not take a renewed file named manifest.json for an archive', async () => {
    const key = 'acme/tx-1';
    await commit(h.store, key);
    const { manifest } = (await h.store.find(key))!;
    const odd = renewal(manifest, 1, ['manifest.json', 'sub/manifest.json']);
    await h.store.commitRenewal(key, odd.files, odd.manifest);
    expect(await keysOf(h.store)).toEqual([key]);
  });
});

describe('S3ArchiveStore listing', () => {
  it('reads every page of the listing', async () => {
    // In a process of its own: s3rver's continuation tokens need OpenSSL's legacy provider (test/support/s3.ts).
    const s3 = await startS3(BUCKET, { record: true, ownProcess: true });
    try {
      // Two objects a page. (Keys whose order s3rver's directory walk keeps: on a later page it skips what it
      // walked in another order than S3's, which real S3 does not do.)
      const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign', listPageSize: 2 });
      const keys = ['acme/tx-1', 'acme/tx-2', 'acme/tx-3', 'beta/tx-4', 'tx-5'];
      for (const key of keys) await commit(store, key);
      const next = renewal((await store.find('acme/tx-2'))!.manifest, 1, ['Contract.pdf', 'manifest.json']);
      await store.commitRenewal('acme/tx-2', next.files, next.manifest);
      await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'esign/acme/tx-partial/completed.zip', Body: 'partial' }));
      await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'esign-other/tx-0/manifest.json', Body: '{}' }));
      const listed = s3.requests.length;
      expect(await keysOf(store)).toEqual(keys);
      const pages = s3.requests.slice(listed);
      // 5 × (ZIP + manifest) + 2 renewal files + 1 partial ZIP, two a page.
      expect(pages).toHaveLength(7);
      expect(pages.every((r) => r.method === 'GET' && /list-type=2/.test(r.url) && /max-keys=2/.test(r.url))).toBe(true);
      expect(pages.slice(1).every((r) => /continuation-token=/.test(r.url))).toBe(true);
    } finally {
      await s3.close();
    }
  });
});

describe('S3 Object Lock', () => {
  let s3: TestS3;
  beforeEach(async () => {
    // A bucket with Object Lock also answers legal hold requests (a renewal asks whether its archive is held).
    s3 = await startS3(BUCKET, { objectLock: true });
  });
  afterEach(() => s3?.close());

  const writes = (path: string) =>
    s3.requests.filter((r) => r.method !== 'GET' && new URL(r.url, 'http://s3').pathname === `/${BUCKET}/esign/${path}`);
  const only = (requests: RecordedRequest[]) => {
    expect(requests).toHaveLength(1);
    return requests[0]!;
  };
  const retainedUntil = (r: RecordedRequest) => Date.parse(String(r.headers['x-amz-object-lock-retain-until-date']));
  const DAY = 24 * 60 * 60 * 1000;

  it('writes completed.zip and every renewal file with the retention and a SHA-256 checksum, the manifest without retention', async () => {
    const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign', objectLock: { mode: 'COMPLIANCE', days: 30 } });
    const key = 'acme/tx-1';
    const before = Date.now();
    const zip = await commit(store, key);
    const { manifest } = (await store.find(key))!;
    const next = renewal(manifest, 1, ['Contract.pdf', 'evidence/certificate-of-completion.pdf']);
    await store.commitRenewal(key, next.files, next.manifest);
    const after = Date.now();

    const locked = [
      { path: `${key}/completed.zip`, bytes: zip },
      ...next.files.files.map((f) => ({ path: `${key}/${f.name}`, bytes: f.bytes })),
    ];
    for (const { path, bytes } of locked) {
      const put = only(writes(path));
      expect(put.method, path).toBe('PUT');
      expect(put.headers['x-amz-object-lock-mode'], path).toBe('COMPLIANCE');
      expect(retainedUntil(put), path).toBeGreaterThanOrEqual(Math.floor((before + 30 * DAY) / 1000) * 1000);
      expect(retainedUntil(put), path).toBeLessThanOrEqual(after + 30 * DAY);
      // The checksum is in a header, over the very bytes sent (not aws-chunked with a trailer).
      expect(put.headers['x-amz-checksum-sha256'], path).toBe(b64(bytes));
      expect(put.body, path).toEqual({ bytes: bytes.length, sha256: b64(bytes) });
      expect(put.headers['content-encoding'], path).toBeUndefined();
      expect(Buffer.from(await store.read(key, path.slice(key.length + 1))).equals(bytes), path).toBe(true);
    }
    const manifests = writes(`${key}/manifest.json`);
    expect(manifests).toHaveLength(2);
    for (const put of manifests) {
      expect(put.headers['x-amz-object-lock-mode']).toBeUndefined();
      expect(put.headers['x-amz-object-lock-retain-until-date']).toBeUndefined();
      // A bucket with Object Lock may have a default retention, under which every PUT needs a checksum.
      expect(put.headers['x-amz-checksum-sha256']).toBe(put.body.sha256);
    }
  });

  it('puts the retention on a multipart upload of completed.zip, and a checksum on each part', async () => {
    const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign', objectLock: { mode: 'GOVERNANCE', days: 7 } });
    const key = 'acme/tx-big';
    const before = Date.now();
    const zip = await commit(store, key, 9 * 1024 * 1024);
    const requests = writes(`${key}/completed.zip`);
    const create = only(requests.filter((r) => r.method === 'POST' && /[?&]uploads(=|&|$)/.test(r.url)));
    expect(create.headers['x-amz-object-lock-mode']).toBe('GOVERNANCE');
    expect(retainedUntil(create)).toBeGreaterThanOrEqual(Math.floor((before + 7 * DAY) / 1000) * 1000);
    expect(retainedUntil(create)).toBeLessThanOrEqual(Date.now() + 7 * DAY);
    expect(create.headers['x-amz-checksum-algorithm']).toBe('SHA256');
    const parts = requests.filter((r) => r.method === 'PUT' && /[?&]partNumber=/.test(r.url));
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part.headers['x-amz-checksum-sha256']).toBe(part.body.sha256);
    expect(parts.reduce((n, p) => n + p.body.bytes, 0)).toBe(zip.length);
    expect((await store.read(key, 'completed.zip')).equals(zip)).toBe(true);
  });

  it("locks each object until the archive's own retention ends, when it records one", async () => {
    const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign', objectLock: { mode: 'COMPLIANCE', days: 30 } });
    const key = 'acme/tx-9';
    const zip = randomBytes(1024);
    const path = join(await mkdtemp(join(tmpdir(), 'archive-zip-')), 'completed.zip');
    await writeFile(path, zip);
    const retention = retentionOf('2026-01-01T00:00:01.000Z', '7 years', 'transaction');
    await store.commit(key, path, { ...manifestFor(key, zip), retention });
    expect(retainedUntil(only(writes(`${key}/completed.zip`)))).toBe(Date.parse(retention.until));
  });

  it('without objectLock, writes as before: no retention, no checksum', async () => {
    const store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign' });
    const key = 'acme/tx-1';
    await commit(store, key);
    const next = renewal((await store.find(key))!.manifest, 1, ['Contract.pdf']);
    await store.commitRenewal(key, next.files, next.manifest);
    const puts = s3.requests.filter((r) => r.method === 'PUT');
    expect(puts).toHaveLength(4);
    for (const put of puts) {
      expect(Object.keys(put.headers).filter((h) => h.startsWith('x-amz-object-lock') || h.startsWith('x-amz-checksum'))).toEqual([]);
    }
  });

  it('refuses an Object Lock setting that is not one', () => {
    for (const objectLock of [
      { mode: 'compliance', days: 30 },
      { mode: 'COMPLIANCE', days: 0 },
      { mode: 'GOVERNANCE', days: 1.5 },
    ]) {
      expect(() => new S3ArchiveStore({ client: s3.client, bucket: BUCKET, objectLock: objectLock as never })).toThrow(
        /invalid S3 Object Lock/,
      );
    }
  });
});

describe('S3 object legal hold', () => {
  // The proxy answers the legal hold and version requests s3rver lacks (test/support/s3.ts), and refuses to delete
  // a held version, as a bucket with Object Lock does.
  let s3: TestS3;
  let store: S3ArchiveStore;
  beforeEach(async () => {
    s3 = await startS3(BUCKET, { objectLock: true });
    store = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign', objectLock: { mode: 'GOVERNANCE', days: 30 } });
  });
  afterEach(() => s3?.close());

  /** The legal hold requests sent from `from` on: object (under the store's prefix), status, version. */
  const holdsSent = (from: number) =>
    s3.requests
      .slice(from)
      .filter((r) => new URL(r.url, 'http://s3').searchParams.has('legal-hold'))
      .map((r) => {
        const url = new URL(r.url, 'http://s3');
        const version = url.searchParams.get('versionId');
        return [
          decodeURIComponent(url.pathname).slice(`/${BUCKET}/esign/`.length),
          r.method === 'PUT' ? r.legalHold : 'GET',
          ...(version ? [version] : []),
        ];
      });
  /** An archive with a renewal of two files: its four objects. */
  async function renewed(key: string): Promise<string[]> {
    await commit(store, key);
    const next = renewal((await store.find(key))!.manifest, 1, ['Contract.pdf', 'evidence/certificate-of-completion.pdf']);
    await store.commitRenewal(key, next.files, next.manifest);
    return ['completed.zip', 'manifest.json', ...next.files.files.map((f) => f.name)].map((f) => `${key}/${f}`);
  }

  it('sets the hold on every object of the archive, the ZIP first, and clears it on every version', async () => {
    const objects = await renewed('acme/tx-1');
    // A neighbour whose key starts like it.
    const neighbour = await renewed('acme/tx-10');
    expect(store.holdsObjects).toBe(true);

    let from = s3.requests.length;
    await store.applyLegalHold('acme/tx-1', true);
    const on = holdsSent(from);
    expect(on[0]).toEqual(['acme/tx-1/completed.zip', 'ON']);
    expect(on.map(([object]) => object).sort()).toEqual([...objects].sort());
    expect(on.every(([, status, version]) => status === 'ON' && version === undefined)).toBe(true);
    for (const object of objects) expect(s3.legalHolds.get(`esign/${object}`), object).toBe('ON');
    for (const object of neighbour) expect(s3.legalHolds.has(`esign/${object}`), object).toBe(false);
    // Held, S3 refuses to delete a version of it, whoever asks.
    await expect(
      s3.client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'esign/acme/tx-1/completed.zip', VersionId: 'v-any' })),
    ).rejects.toMatchObject({ name: 'AccessDenied' });

    // Again: the same requests, nothing else.
    from = s3.requests.length;
    await store.applyLegalHold('acme/tx-1', true);
    expect(holdsSent(from)).toEqual(on);

    from = s3.requests.length;
    await store.applyLegalHold('acme/tx-1', false);
    const off = holdsSent(from);
    expect(off.map(([object]) => object).sort()).toEqual([...objects].sort());
    // Each version by its id: a version held before a renewal replaced it is released too.
    expect(off.every(([, status, version]) => status === 'OFF' && /^v-/.test(version ?? ''))).toBe(true);
    expect(s3.requests.slice(from).filter((r) => /[?&]versions(=|&|$)/.test(r.url))).toHaveLength(1);
    for (const object of objects) expect(s3.legalHolds.get(`esign/${object}`), object).toBe('OFF');
  });

  it('holds a renewal of a held archive where it is written, and asks only that of one not held', async () => {
    await commit(store, 'acme/tx-held');
    await commit(store, 'acme/tx-free');
    await store.applyLegalHold('acme/tx-held', true);

    for (const key of ['acme/tx-held', 'acme/tx-free']) {
      const next = renewal((await store.find(key))!.manifest, 1, ['Contract.pdf']);
      const from = s3.requests.length;
      await store.commitRenewal(key, next.files, next.manifest);
      const sent = holdsSent(from);
      if (key === 'acme/tx-free') {
        expect(sent).toEqual([['acme/tx-free/completed.zip', 'GET']]);
        expect(s3.legalHolds.has('esign/acme/tx-free/renewals/1/Contract.pdf')).toBe(false);
        continue;
      }
      // Asked after the renewal is written, which then holds its file and the new manifest (a new version, unheld).
      expect(sent[0]).toEqual(['acme/tx-held/completed.zip', 'GET']);
      expect(s3.legalHolds.get('esign/acme/tx-held/renewals/1/Contract.pdf')).toBe('ON');
      expect(s3.legalHolds.get('esign/acme/tx-held/manifest.json')).toBe('ON');
    }
  });

  it('leaves alone an archive that is not there', async () => {
    const from = s3.requests.length;
    await store.applyLegalHold('acme/tx-none', true);
    await store.applyLegalHold('acme/tx-none', false);
    expect(holdsSent(from)).toEqual([['acme/tx-none/completed.zip', 'ON']]);
    expect(s3.legalHolds.size).toBe(0);
  });

  it('purges once the register keeps no hold, lifting a hold S3 still had (a raced release) before each delete', async () => {
    const key = 'acme/tx-7';
    const zip = randomBytes(1024);
    const path = join(await mkdtemp(join(tmpdir(), 'archive-zip-')), 'completed.zip');
    await writeFile(path, zip);
    await store.commit(key, path, { ...manifestFor(key, zip), retention: retentionOf('2026-01-01T00:00:01.000Z', '1 year', 'worker') });
    await store.applyLegalHold(key, true);
    const due = tombstoneOf((await store.find(key))!.manifest, '2027-01-03T00:00:00.000Z');

    const from = s3.requests.length;
    await store.purge(key, due, []);
    const after = s3.requests.slice(from).map((r) => `${r.method} ${decodeURIComponent(new URL(r.url, 'http://s3').pathname)}`);
    const zipObject = `/${BUCKET}/esign/${key}/completed.zip`;
    expect(after.indexOf(`PUT ${zipObject}`)).toBeLessThan(after.indexOf(`DELETE ${zipObject}`));
    expect(holdsSent(from)).toContainEqual([`${key}/completed.zip`, 'OFF', expect.stringMatching(/^v-/)]);
    expect((await store.find(key))!.manifest.purged?.at).toBe('2027-01-03T00:00:00.000Z');
    await expect(store.read(key, 'completed.zip')).rejects.toThrow('has no file completed.zip');
  });

  it('sends nothing on a bucket without Object Lock', async () => {
    const plain = new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'esign' });
    await commit(plain, 'acme/tx-1');
    const from = s3.requests.length;
    expect(plain.holdsObjects).toBe(false);
    await plain.applyLegalHold('acme/tx-1', true);
    await plain.applyLegalHold('acme/tx-1', false);
    expect(s3.requests.slice(from)).toEqual([]);
  });
});

describe('worker configuration of S3 Object Lock', () => {
  const base = { ESIGN_PROVIDER_TOKEN: 'token', ESIGN_SIGNATURE_VERIFICATION: 'off', ESIGN_ARCHIVE_S3_BUCKET: 'archive' };

  it('takes a mode and a number of days, both or neither', () => {
    expect(workerConfigFromEnv(base).s3?.objectLock).toBeUndefined();
    expect(
      workerConfigFromEnv({ ...base, ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE: 'COMPLIANCE', ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS: '3650' }).s3
        ?.objectLock,
    ).toEqual({ mode: 'COMPLIANCE', days: 3650 });
    expect(() => workerConfigFromEnv({ ...base, ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE: 'GOVERNANCE' })).toThrow(
      /S3 Object Lock needs both ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE .* and ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS .*; only _MODE is set/,
    );
    expect(() => workerConfigFromEnv({ ...base, ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS: '30' })).toThrow(/only _DAYS is set/);
  });

  it('refuses a mode or a number of days that is not one, and Object Lock without a bucket', () => {
    const lock = { ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE: 'GOVERNANCE', ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS: '30' };
    expect(() => workerConfigFromEnv({ ...base, ...lock, ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE: 'governance' })).toThrow(
      /invalid worker configuration: ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE/,
    );
    for (const days of ['0', '-1', '2.5', 'thirty', '36501']) {
      expect(() => workerConfigFromEnv({ ...base, ...lock, ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS: days }), days).toThrow(
        /invalid worker configuration: ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS/,
      );
    }
    const { ESIGN_ARCHIVE_S3_BUCKET: _bucket, ...local } = base;
    expect(() => workerConfigFromEnv({ ...local, ...lock })).toThrow(/apply to an S3 archive: set ESIGN_ARCHIVE_S3_BUCKET/);
  });
});
