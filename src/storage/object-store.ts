/**
 * Small files kept by key: a bulk send's CSV, its pages and its result. The same two kinds of store as the
 * archive (a local directory, an S3-compatible bucket), chosen by one setting: a path, or `s3://bucket/prefix`.
 * Writes are whole-object and atomic (a reader never sees half a file), so a retried activity rewrites a key
 * rather than appending to it. The S3 store is in ./s3-object-store.ts, apart, so that the client package
 * (packages/client) carries no AWS SDK.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { randomUUID } from 'node:crypto';

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

export function checkObjectKey(key: string): string {
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
    const path = join(this.#root, ...checkObjectKey(key).split('/'));
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

/** A store's prefix in its bucket as keys are put under it: empty, or ending with one slash. */
export function bucketPrefix(prefix: string): string {
  return prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
}
