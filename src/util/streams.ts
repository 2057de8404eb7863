import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface WrittenFile {
  bytes: number;
  sha256: string;
}

/**
 * Streams `source` into the file at `path` while counting and hashing the
 * bytes: memory stays flat whatever the size. Rejects if either side fails.
 */
export async function writeHashed(
  source: Readable | NodeJS.ReadableStream,
  path: string,
  options: {
    signal?: AbortSignal;
    onProgress?: (bytes: number) => void;
    /** Sees each chunk before it is written, in order (a verifier reading the bytes in the same pass); waited for. */
    observe?: (chunk: Buffer) => Promise<void> | void;
  } = {},
): Promise<WrittenFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  const { observe } = options;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      options.onProgress?.(bytes);
      const seen = observe?.(chunk);
      if (seen) seen.then(() => callback(null, chunk), callback);
      else callback(null, chunk);
    },
  });
  await pipeline(source, tap, createWriteStream(path), options.signal ? { signal: options.signal } : {});
  return { bytes, sha256: hash.digest('hex') };
}

/** SHA-256 and size of a file, read as a stream. */
export function hashFile(path: string): Promise<WrittenFile> {
  return hashStream(createReadStream(path));
}

/** SHA-256 and size of everything a stream yields, without keeping it. */
export async function hashStream(source: AsyncIterable<unknown>): Promise<WrittenFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of source) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}
