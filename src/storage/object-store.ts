/**
 * Small files kept by key: a bulk send's CSV, its pages and its result. The same two kinds of store as the
 * archive (a local directory, an S3-compatible bucket), chosen by one setting: a path, or `s3://bucket/prefix`.
 * Writes are whole-object and atomic (a reader never sees half a file), so a retried activity rewrites a key
 * rather than appending to it. The S3 store is in ./s3-object-store.ts, apart, so that the client package
 * (packages/client) carries no AWS SDK.
 */
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, rename, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { randomUUID } from 'node:crypto';

export interface ObjectGetOptions {
  /**
   * The most bytes wanted: a larger object is refused (`ObjectRefused`, `too_large`) without being read whole,
   * its declared size checked first and its bytes counted as they arrive.
   */
  maxBytes?: number;
}

export interface ObjectStore {
  /** Where it is, for messages and results (`file:///…` or `s3://bucket/prefix/`). */
  readonly location: string;
  put(key: string, body: Buffer | string): Promise<void>;
  /** The object's bytes, or undefined when there is none. */
  get(key: string, options?: ObjectGetOptions): Promise<Buffer | undefined>;
  /** Where a key is, for a user to fetch it. */
  urlOf(key: string): string;
}

/** Keys are relative paths of safe segments: no `..`, no absolute path, nothing a directory store could escape with. */
const KEY = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9._@:-]+(?:\/[A-Za-z0-9._@:-]+)*$/;

export function checkObjectKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`);
  return key;
}

/** An object a store would not hand over: larger than `maxBytes`, or (a directory store) not a regular file. */
export class ObjectRefused extends Error {
  override readonly name = 'ObjectRefused';
  constructor(
    message: string,
    readonly reason: 'too_large' | 'not_a_file',
  ) {
    super(message);
  }
}

const tooLarge = (key: string, maxBytes: number, bytes?: number) =>
  new ObjectRefused(`${key} is ${bytes === undefined ? 'over' : `${bytes} bytes, over`} the ${maxBytes}-byte limit`, 'too_large');

/**
 * A stream's bytes, refused as soon as they pass `maxBytes` (and before any is read when its declared size does):
 * leaving the loop early destroys the stream, so the rest is never received.
 */
export async function collectAtMost(
  stream: AsyncIterable<Uint8Array>,
  key: string,
  maxBytes: number | undefined,
  declared?: number,
): Promise<Buffer> {
  if (maxBytes !== undefined && declared !== undefined && declared > maxBytes) {
    (stream as { destroy?: () => void }).destroy?.();
    throw tooLarge(key, maxBytes, declared);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (maxBytes !== undefined && total > maxBytes) throw tooLarge(key, maxBytes);
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
  }
  return Buffer.concat(chunks, total);
}

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fsConstants;

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
  /**
   * Opened without following a symbolic link (the store writes none) nor waiting on a FIFO, and read through that
   * descriptor only if it is a regular file, no further than `maxBytes`: a link or a device planted at a key, or a
   * file growing while it is read, gives nothing else and never more than asked for.
   */
  async get(key: string, options: ObjectGetOptions = {}): Promise<Buffer | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.#path(key), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP') throw new ObjectRefused(`${key} is a symbolic link`, 'not_a_file');
      throw err;
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new ObjectRefused(`${key} is not a regular file`, 'not_a_file');
      const { maxBytes } = options;
      if (maxBytes === undefined) return await handle.readFile();
      if (st.size > maxBytes) throw tooLarge(key, maxBytes, st.size);
      return await collectAtMost(chunksOf(handle), key, maxBytes);
    } finally {
      await handle.close();
    }
  }
  urlOf(key: string): string {
    return `file://${this.#path(key)}`;
  }
}

/** A file's bytes from its descriptor, from the start to its end as read (not as fstat said). */
async function* chunksOf(handle: FileHandle): AsyncGenerator<Uint8Array> {
  for (let position = 0; ;) {
    const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(256 * 1024), 0, 256 * 1024, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

/** A store's prefix in its bucket as keys are put under it: empty, or ending with one slash. */
export function bucketPrefix(prefix: string): string {
  return prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
}
