/**
 * Small files kept by key: a bulk send's CSV, its pages and its result. The same two kinds of store as the
 * archive (a local directory, an S3-compatible bucket), chosen by one setting: a path, or `s3://bucket/prefix`.
 * Writes are whole-object and atomic (a reader never sees half a file), so a retried activity rewrites a key
 * rather than appending to it.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { randomUUID } from 'node:crypto';
import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { s3Client } from '../archive/s3-store.js';

export interface ObjectStore {
  /** Where it is, for messages and results (`file:///…` or `s3://bucket/prefix/`). */
  readonly location: string;
  put(key: string, body: Buffer | string): Promise<void>;
  /** The object's bytes, or undefined when there is none. */
  get(key: string): Promise<Buffer | undefined>;
  /** Where a key is, for a user to fetch it. */
  urlOf(key: string): string;
}

/** Keys are relative paths of safe segments: no `..`, no absolute path, nothing a directory store could escape with. */
const KEY = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9._@:-]+(?:\/[A-Za-z0-9._@:-]+)*$/;

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`);
  return key;
}

export class LocalObjectStore implements ObjectStore {
  readonly #root: string;
  constructor(dir: string) {
    this.#root = resolve(dir);
  }
  get location(): string {
    return `file://${this.#root}/`;
  }
  #path(key: string): string {
    const path = join(this.#root, ...checkKey(key).split('/'));
    if (!path.startsWith(this.#root + sep)) throw new Error(`invalid object key ${JSON.stringify(key)}`);
    return path;
  }
  async put(key: string, body: Buffer | string): Promise<void> {
    const path = this.#path(key);
    await mkdir(dirname(path), { recursive: true });
    // Written beside and renamed into place: a crash leaves the old object or the new one, never a torn one.
    const partial = `${path}.${randomUUID()}.partial`;
    await writeFile(partial, body);
    await rename(partial, path);
  }
  async get(key: string): Promise<Buffer | undefined> {
    return readFile(this.#path(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }
  urlOf(key: string): string {
    return `file://${this.#path(key)}`;
  }
}

export class S3ObjectStore implements ObjectStore {
  readonly #prefix: string;
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    prefix = '',
  ) {
    this.#prefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  }
  get location(): string {
    return `s3://${this.bucket}/${this.#prefix}`;
  }
  async put(key: string, body: Buffer | string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.#prefix + checkKey(key), Body: body }));
  }
  async get(key: string): Promise<Buffer | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#prefix + checkKey(key) }));
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (err) {
      if (err instanceof NoSuchKey) return undefined;
      throw err;
    }
  }
  urlOf(key: string): string {
    return `s3://${this.bucket}/${this.#prefix}${checkKey(key)}`;
  }
}

/**
 * The store a setting names (ESIGN_TEMPLATE_STORE, parsed by src/templates/env.ts): a directory, or
 * `s3://bucket/prefix` with the archive's S3 endpoint and region. Batch files live beside the templates.
 */
export function objectStoreAt(setting: { location: string; s3: { region: string; endpoint: string | undefined } }): ObjectStore {
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(setting.location);
  if (!s3) return new LocalObjectStore(setting.location);
  return new S3ObjectStore(s3Client(setting.s3), s3[1]!, s3[2]);
}
