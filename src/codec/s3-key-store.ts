/**
 * The key store as S3 objects, for processes on several machines:
 *
 *   <prefix>/store.json                        what identifies the store, written once by `esign keys init`
 *   <prefix>/keys/<id>.json                    one record a data key, the wrapped key in base64 (none in a tombstone)
 *   <prefix>/subjects/<sha256 of subject>.json the id of the subject's live key
 *
 * Nothing here locks: the store relies on S3's conditional writes. A subject's key is the one whose pointer was
 * written first (`If-None-Match: *`); a pointer left by an interrupted erasure is replaced only if it is still the one
 * read (`If-Match`), and so is a record that is rewrapped, so an erasure is never undone by a write that read the key
 * before it. S3 honours these; an S3-compatible store must too (PutObject with If-None-Match and If-Match, DeleteObject
 * with If-Match): one that ignores them lets two processes make two keys for one workflow, and an erasure reaches only
 * the one its pointer names.
 *
 * An erasure writes the tombstone over the record, then deletes every other version of the record and of the
 * pointer (ListObjectVersions, DeleteObject with each VersionId): on a versioned bucket a plain overwrite or delete
 * keeps the bytes in an earlier version. So the key prefix must not be under Object Lock (a retained version cannot be
 * deleted, and the erasure fails saying so), and the store's credentials need s3:ListBucketVersions and
 * s3:DeleteObjectVersion. Backups and replicas of the bucket are beyond its reach (docs/codec.md).
 */
import { createHash, randomUUID } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listObjectVersions, type ObjectVersion } from '../storage/s3-client.js';
import { KeyStoreExists, KeyStoreMissing, type DataKeyRecord, type KeyStore, type KeyStoreIdentity } from './key-store.js';

export interface S3KeyStoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix, e.g. `esign/keys` (no trailing slash needed; empty for the bucket's root). */
  prefix: string;
  /**
   * How long `get` and `current` answers are kept in this process (default 0: never). Another process's erasure is
   * seen here only once they expire; an erasure in this process empties them at once.
   */
  cacheMs?: number;
}

/** Rounds of a conditional write lost to other writers before giving up (each round lost means another one won). */
const MAX_ROUNDS = 10;
/** Ids are `dk.` and base64url; anything else is no key of this store, and must not make an object name. */
const ID = /^[A-Za-z0-9._-]{1,128}$/;

interface StoredRecord {
  id: string;
  subject: string;
  /** Base64. */
  wrapped?: string;
  masterKeyId: string;
  createdAt: string;
  erasedAt?: string;
  erasedBy?: string;
}

interface Read<T> {
  value: T;
  etag: string;
}

type Condition = { IfNoneMatch: '*' } | { IfMatch: string };

const statusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const nameOf = (err: unknown) => (err as { name?: string }).name;
const notFound = (err: unknown) => nameOf(err) === 'NoSuchKey' || nameOf(err) === 'NotFound' || statusOf(err) === 404;
/** 412: the condition did not hold; 409: a concurrent conditional write to the same key, which S3 says to retry. */
const lostRace = (err: unknown) =>
  nameOf(err) === 'PreconditionFailed' || nameOf(err) === 'ConditionalRequestConflict' || statusOf(err) === 412 || statusOf(err) === 409;

export class S3KeyStore implements KeyStore {
  readonly location: string;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #base: string;
  readonly #cacheMs: number;
  readonly #cache = new Map<string, { record: DataKeyRecord; until: number }>();
  #opening: Promise<KeyStoreIdentity> | undefined;

  constructor(options: S3KeyStoreOptions) {
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#base = options.prefix.replace(/^\/+|\/+$/g, '');
    this.#cacheMs = options.cacheMs ?? 0;
    if (!Number.isFinite(this.#cacheMs) || this.#cacheMs < 0) throw new Error(`invalid cacheMs ${this.#cacheMs}: 0 or more milliseconds`);
    this.location = `s3://${this.#bucket}${this.#base ? `/${this.#base}` : ''}`;
  }

  async init(): Promise<KeyStoreIdentity> {
    const exists = () => KeyStoreExists.at(this.location);
    if (await this.#read(this.#name('store.json'))) throw exists();
    // Records without store.json: the store was lost, and a new one here would stand in for it.
    const keys = await this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#name('keys/'), MaxKeys: 1 }));
    if ((keys.Contents ?? []).length > 0) {
      throw new KeyStoreExists(
        `${this.location} holds data keys but no store.json: restore the store from its backup rather than create one`,
      );
    }
    const identity: KeyStoreIdentity = { storeId: randomUUID(), createdAt: new Date().toISOString() };
    if (!(await this.#put(this.#name('store.json'), identity, { IfNoneMatch: '*' }))) throw exists();
    this.#opening = Promise.resolve(identity);
    return identity;
  }

  async open(): Promise<KeyStoreIdentity> {
    this.#opening ??= this.#load();
    return this.#opening.catch((err: unknown) => {
      this.#opening = undefined;
      throw err;
    });
  }

  async current(subject: string): Promise<DataKeyRecord | undefined> {
    const cached = this.#cached(`subject:${subject}`);
    if (cached) return cached;
    await this.open();
    const live = await this.#live(subject);
    return live && this.#remember(live);
  }

  async create(record: DataKeyRecord & { wrapped: Buffer }): Promise<DataKeyRecord> {
    await this.open();
    if (!ID.test(record.id)) throw new Error(`invalid data key id "${record.id}"`);
    if (!Buffer.isBuffer(record.wrapped) || record.wrapped.length === 0) throw new Error(`data key "${record.id}" has no wrapped key`);
    const standing = await this.#live(record.subject);
    if (standing) return this.#remember(standing);

    const mine: DataKeyRecord = {
      id: record.id,
      subject: record.subject,
      wrapped: Buffer.from(record.wrapped),
      masterKeyId: record.masterKeyId,
      createdAt: record.createdAt,
    };
    // The record before its pointer: a pointer always names a record that is there.
    if (!(await this.#put(this.#keyName(mine.id), encode(mine), { IfNoneMatch: '*' }))) {
      const there = await this.#record(mine.id);
      const retried = there?.value.wrapped?.equals(mine.wrapped!) && there.value.subject === mine.subject;
      if (!retried) throw new Error(`data key id "${mine.id}" is taken in the key store (${this.location})`);
    }
    const pointer = this.#pointerName(mine.subject);
    let condition: Condition = { IfNoneMatch: '*' };
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (await this.#put(pointer, { id: mine.id }, condition)) return this.#remember(mine);
      const winner = await this.#read(pointer);
      if (!winner) {
        condition = { IfNoneMatch: '*' };
        continue;
      }
      const stood = await this.#record(pointerId(winner.value, pointer));
      if (stood?.value.wrapped && stood.value.subject === mine.subject) {
        // Another process's key stands; this one was never handed out, so it goes, every version of it.
        if (stood.value.id !== mine.id) await this.#deleteVersions(this.#keyName(mine.id), { keepCurrent: false });
        return this.#remember(stood.value);
      }
      // The pointer names an erased key: an erasure stopped before removing it. Replaced only as it was read.
      condition = { IfMatch: winner.etag };
    }
    throw new Error(
      `no data key could be made for "${mine.subject}" in ${this.location} after ${MAX_ROUNDS} rounds: ` +
        'the store is contended, or does not honour conditional writes',
    );
  }

  async get(id: string): Promise<DataKeyRecord | undefined> {
    if (!ID.test(id)) return undefined;
    const cached = this.#cached(`id:${id}`);
    if (cached) return cached;
    await this.open();
    const read = await this.#record(id);
    return read && this.#remember(read.value);
  }

  async erase(subject: string, erasedAt: string, erasedBy: string): Promise<DataKeyRecord[]> {
    await this.open();
    this.#cache.clear();
    try {
      const pointerName = this.#pointerName(subject);
      const pointer = await this.#read(pointerName);
      if (!pointer) return [];
      const erased: DataKeyRecord[] = [];
      const stored = await this.#record(pointerId(pointer.value, pointerName));
      if (stored && stored.value.subject === subject) {
        const keyName = this.#keyName(stored.value.id);
        if (stored.value.wrapped) {
          const { wrapped: _gone, ...kept } = stored.value;
          const tombstone: DataKeyRecord = { ...kept, erasedAt, erasedBy };
          // Unconditional: a rewrap in flight writes only over the version it read, so it cannot land after this.
          await this.#client.send(this.#putCommand(keyName, encode(tombstone)));
          erased.push(tombstone);
        }
        await this.#deleteVersions(keyName, { keepCurrent: true });
      }
      // The pointer last: until it is gone, the erasure run again finds what it did not finish. Deleted only if it
      // still names the erased key (a process may have made the subject's next key meanwhile).
      try {
        await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: pointerName, IfMatch: pointer.etag }));
      } catch (err) {
        if (!lostRace(err) && !notFound(err)) throw err;
      }
      await this.#deleteVersions(pointerName, { keepCurrent: true });
      return erased;
    } finally {
      this.#cache.clear();
    }
  }

  async *list(): AsyncIterable<DataKeyRecord> {
    await this.open();
    const prefix = this.#name('keys/');
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const object of page.Contents ?? []) {
        const id = object.Key?.slice(prefix.length).replace(/\.json$/, '');
        if (!id || !object.Key?.endsWith('.json') || !ID.test(id)) continue;
        // Gone since the listing: an orphan of a lost race, removed by the process that lost it.
        const read = await this.#record(id);
        if (read) yield read.value;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async rewrap(id: string, wrapped: Buffer, masterKeyId: string): Promise<void> {
    await this.open();
    if (!Buffer.isBuffer(wrapped) || wrapped.length === 0) throw new Error(`data key "${id}": no wrapped key to store`);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const stored = ID.test(id) ? await this.#record(id) : undefined;
      if (!stored) throw new Error(`the key store (${this.location}) holds no data key "${id}"`);
      if (!stored.value.wrapped)
        throw new Error(`data key "${id}" was erased at ${stored.value.erasedAt ?? 'an unknown time'}: there is nothing to rewrap`);
      if (await this.#put(this.#keyName(id), encode({ ...stored.value, wrapped, masterKeyId }), { IfMatch: stored.etag })) {
        this.#cache.clear();
        // The earlier versions hold the key under the master key being retired: a rotation leaves none behind.
        await this.#deleteVersions(this.#keyName(id), { keepCurrent: true });
        return;
      }
    }
    throw new Error(`data key "${id}" could not be rewrapped in ${this.location} after ${MAX_ROUNDS} rounds: the store is contended`);
  }

  async close(): Promise<void> {
    this.#cache.clear();
  }

  async #load(): Promise<KeyStoreIdentity> {
    const read = await this.#read(this.#name('store.json'));
    if (!read) {
      throw KeyStoreMissing.at(this.location);
    }
    const identity = read.value as Partial<KeyStoreIdentity>;
    if (typeof identity.storeId !== 'string' || typeof identity.createdAt !== 'string') {
      throw new Error(`${this.location}/store.json is not a key store's identity`);
    }
    return { storeId: identity.storeId, createdAt: identity.createdAt };
  }

  /** The subject's live key, read now (not from the cache). */
  async #live(subject: string): Promise<DataKeyRecord | undefined> {
    const name = this.#pointerName(subject);
    const pointer = await this.#read(name);
    if (!pointer) return undefined;
    const record = await this.#record(pointerId(pointer.value, name));
    return record?.value.wrapped && record.value.subject === subject ? record.value : undefined;
  }

  async #record(id: string): Promise<Read<DataKeyRecord> | undefined> {
    const name = this.#keyName(id);
    const read = await this.#read(name);
    return read && { value: decode(read.value, `${this.#bucket}/${name}`), etag: read.etag };
  }

  /** A JSON object and its ETag, or undefined when there is none. */
  async #read(name: string): Promise<Read<unknown> | undefined> {
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: name }));
      return { value: JSON.parse(await res.Body!.transformToString('utf8')) as unknown, etag: res.ETag ?? '' };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  /** Writes `value` if `condition` holds: false when it did not (another writer came first). */
  async #put(name: string, value: unknown, condition: Condition): Promise<boolean> {
    try {
      await this.#client.send(this.#putCommand(name, value, condition));
      return true;
    } catch (err) {
      // If-Match on an object that is gone answers 404: the object read is not there any more, the same lost race.
      if (lostRace(err) || ('IfMatch' in condition && notFound(err))) return false;
      throw err;
    }
  }

  #putCommand(name: string, value: unknown, condition?: Condition): PutObjectCommand {
    return new PutObjectCommand({
      Bucket: this.#bucket,
      Key: name,
      Body: `${JSON.stringify(value)}\n`,
      ContentType: 'application/json',
      ...condition,
    });
  }

  /**
   * Deletes versions of exactly `name` (and its delete markers): every one, or every one but the current version.
   * The older first, so that no earlier version becomes the current one on the way.
   */
  async #deleteVersions(name: string, { keepCurrent }: { keepCurrent: boolean }): Promise<void> {
    const versions = (await this.#versions(name)).filter((v) => v.Key === name && (!keepCurrent || !v.IsLatest || v.DeleteMarker));
    versions.sort((a, b) => Number(a.IsLatest) - Number(b.IsLatest));
    for (const v of versions) await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: name, VersionId: v.VersionId }));
  }

  /** Every version and delete marker under `prefix`. */
  #versions(prefix: string): Promise<ObjectVersion[]> {
    return listObjectVersions(this.#client, this.#bucket, prefix);
  }

  #cached(key: string): DataKeyRecord | undefined {
    const hit = this.#cache.get(key);
    if (hit && hit.until > Date.now()) return hit.record;
    if (hit) this.#cache.delete(key);
    return undefined;
  }

  #remember(record: DataKeyRecord): DataKeyRecord {
    if (this.#cacheMs > 0) {
      const until = Date.now() + this.#cacheMs;
      this.#cache.set(`id:${record.id}`, { record, until });
      if (record.wrapped) this.#cache.set(`subject:${record.subject}`, { record, until });
    }
    return record;
  }

  #name(relative: string): string {
    return this.#base ? `${this.#base}/${relative}` : relative;
  }

  #keyName(id: string): string {
    return this.#name(`keys/${id}.json`);
  }

  /** Hashed: a workflow id may hold any character, and an object name must not. */
  #pointerName(subject: string): string {
    return this.#name(`subjects/${createHash('sha256').update(subject, 'utf8').digest('hex')}.json`);
  }
}

function encode(record: DataKeyRecord): StoredRecord {
  return {
    id: record.id,
    subject: record.subject,
    ...(record.wrapped ? { wrapped: record.wrapped.toString('base64') } : {}),
    masterKeyId: record.masterKeyId,
    createdAt: record.createdAt,
    ...(record.erasedAt ? { erasedAt: record.erasedAt } : {}),
    ...(record.erasedBy ? { erasedBy: record.erasedBy } : {}),
  };
}

function decode(value: unknown, where: string): DataKeyRecord {
  const s = value as Partial<StoredRecord> | null;
  const text = (v: unknown) => typeof v === 'string';
  if (
    !s ||
    !text(s.id) ||
    !text(s.subject) ||
    !text(s.masterKeyId) ||
    !text(s.createdAt) ||
    (s.wrapped === undefined) === (s.erasedAt === undefined)
  ) {
    throw new Error(`${where} is not a data key record`);
  }
  return {
    id: s.id,
    subject: s.subject,
    ...(s.wrapped !== undefined ? { wrapped: Buffer.from(s.wrapped, 'base64') } : {}),
    masterKeyId: s.masterKeyId,
    createdAt: s.createdAt,
    ...(s.erasedAt !== undefined ? { erasedAt: s.erasedAt } : {}),
    ...(s.erasedBy !== undefined ? { erasedBy: s.erasedBy } : {}),
  };
}

function pointerId(value: unknown, where: string): string {
  const id = (value as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || !ID.test(id)) throw new Error(`${where} is not a subject's key pointer`);
  return id;
}
