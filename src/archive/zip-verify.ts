import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';

export class UnsafeZipError extends Error {
  override readonly name = 'UnsafeZipError';
}

export interface ZipLimits {
  maxEntries: number;
  maxTotalUncompressed: number;
  /** Largest uncompressed/compressed ratio allowed per entry (zip-bomb guard). */
  maxRatio: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = { maxEntries: 200, maxTotalUncompressed: 4 * 1024 ** 3, maxRatio: 200 };

export interface VerifiedEntry {
  name: string;
  bytes: number;
  sha256: string;
}

/**
 * Looks at each entry's content during the same pass (signature checks, the
 * audit trail), one entry at a time: each entry it opens goes through a sink.
 */
export interface EntryInspector {
  /** The sink this entry's content goes through, or undefined when it is not looked at. */
  open(name: string): EntrySink | undefined;
}

/** Where an inspected entry's bytes go. The sink hashes them too, so the entry is not hashed twice. */
export interface EntrySink {
  /** An entry larger than this is refused before it is read, rather than risk the worker's memory. */
  readonly maxBytes?: number;
  update(bytes: Buffer): void;
  /** The entry's SHA-256 (hex), once all its bytes are in. */
  sha256(): string;
  /** Looks at the entry once its size, CRC-32 and SHA-256 are verified. */
  inspect(entry: VerifiedEntry): Promise<void>;
}

/** An entry is held whole for the inspector only up to this size; a larger one is refused rather than risk the worker's memory. */
export const MAX_INSPECTED_BYTES = 512 * 1024 * 1024;

/** A sink that holds the entry whole (the audit trail, the certificate of completion) and shows it to `inspect`. */
export function holdWhole(inspect: (entry: VerifiedEntry, content: Buffer) => Promise<void>): EntrySink {
  const chunks: Buffer[] = [];
  const hash = createHash('sha256');
  let bytes = 0;
  return {
    maxBytes: MAX_INSPECTED_BYTES,
    update(chunk) {
      bytes += chunk.length;
      if (bytes > MAX_INSPECTED_BYTES) throw new UnsafeZipError(`an entry of over ${MAX_INSPECTED_BYTES} bytes is too large to verify`);
      hash.update(chunk);
      // Copied: a stored entry's bytes are views into the HTTP client's chunks, whose reuse we do not control.
      chunks.push(Buffer.from(chunk));
    },
    sha256: () => hash.digest('hex'),
    inspect: (entry) => inspect(entry, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)),
  };
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

/**
 * Reads a ZIP without extracting it and checks that it holds only regular PDF
 * files (and JSON evidence beside them) with safe, unique names (no `..`, no
 * absolute paths, no symlinks), that its central directory is intact, that
 * every entry's content matches its CRC-32, and that it is no compression
 * bomb. Returns each entry's size and SHA-256.
 */
export async function verifyZip(path: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS, inspect?: EntryInspector): Promise<VerifiedEntry[]> {
  const zip = await openZip(path);
  try {
    // The whole directory is judged before any content is read (or shown to `inspect`).
    const listed = await directory(zip, limits);
    const entries: VerifiedEntry[] = [];
    for (const entry of listed) {
      const name = entry.fileName;
      const sink = inspect?.open(name);
      if (sink?.maxBytes !== undefined && entry.uncompressedSize > sink.maxBytes) {
        throw new UnsafeZipError(`entry "${name}" is too large to verify`);
      }
      let content;
      try {
        content = await entryContent(zip, path, entry, sink);
      } catch (e) {
        throw new UnsafeZipError(`entry "${name}": ${(e as Error).message}`);
      }
      const wrong = contentProblem(name, content.head);
      if (wrong) throw new UnsafeZipError(wrong);
      if (content.bytes !== entry.uncompressedSize) {
        throw new UnsafeZipError(`entry "${name}" holds ${content.bytes} bytes, its header says ${entry.uncompressedSize}`);
      }
      // yauzl does not check CRC-32, and stored entries are read as raw byte ranges: this is the only check.
      if (content.crc !== entry.crc32) throw new UnsafeZipError(`entry "${name}" fails its CRC-32 check (corrupted in the ZIP)`);
      const verified = { name, bytes: content.bytes, sha256: content.sha256 };
      if (sink) await sink.inspect(verified);
      entries.push(verified);
    }
    return entries;
  } finally {
    zip.close();
  }
}

/** Opens a ZIP file for reading its central directory (yauzl reads only the end of the file for that). */
export async function openZip(path: string): Promise<yauzl.ZipFile> {
  try {
    return await new Promise<yauzl.ZipFile>((resolve, reject) =>
      yauzl.open(
        path,
        { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true, decodeStrings: true },
        (err, z) => (err ? reject(err) : resolve(z)),
      ),
    );
  } catch (err) {
    throw new UnsafeZipError(`not a readable ZIP: ${(err as Error).message}`);
  }
}

/** Why an entry's name is refused (a directory, a path, a hidden or duplicate name), if it is; adds it to `names`. */
export function nameProblem(name: string, names: Set<string>): string | undefined {
  if (name.endsWith('/')) return `unexpected directory entry "${name}"`;
  if (name.includes('/') || name.includes('\\') || name.startsWith('.')) return `unsafe entry name "${name}"`;
  if (names.has(name.toLowerCase())) return `duplicate entry name "${name}"`;
  names.add(name.toLowerCase());
  return undefined;
}

/** Whether an entry's first bytes are what its name says (a PDF, or JSON evidence); the problem if not. */
export function contentProblem(name: string, head: string): string | undefined {
  const json = name.toLowerCase().endsWith('.json');
  if (json ? !/^\s*[[{]/.test(head) : head !== '%PDF-') return `entry "${name}" is not a ${json ? 'JSON file' : 'PDF'}`;
  return undefined;
}

/** Every entry of the central directory, each checked for a safe name and type and against the limits. */
export function directory(zip: yauzl.ZipFile, limits: ZipLimits): Promise<yauzl.Entry[]> {
  const listed: yauzl.Entry[] = [];
  const names = new Set<string>();
  let total = 0;
  return new Promise<yauzl.Entry[]>((resolve, reject) => {
    const fail = (message: string) => reject(new UnsafeZipError(message));
    zip.on('error', (err: Error) => fail(`corrupt ZIP: ${err.message}`));
    zip.on('end', () => resolve(listed));
    zip.on('entry', (entry: yauzl.Entry) => {
      const name = entry.fileName;
      if (listed.length + 1 > limits.maxEntries) return fail(`more than ${limits.maxEntries} entries`);
      const unsafe = nameProblem(name, names);
      if (unsafe) return fail(unsafe);
      const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
      if (mode === S_IFLNK) return fail(`entry "${name}" is a symbolic link`);
      if (mode !== 0 && mode !== S_IFREG) return fail(`entry "${name}" is not a regular file`);
      if (entry.isEncrypted()) return fail(`entry "${name}" is encrypted`);
      total += entry.uncompressedSize;
      if (total > limits.maxTotalUncompressed) return fail(`uncompressed size over ${limits.maxTotalUncompressed} bytes`);
      if (entry.compressedSize > 0 && entry.uncompressedSize / entry.compressedSize > limits.maxRatio) {
        return fail(`entry "${name}" expands ${Math.round(entry.uncompressedSize / entry.compressedSize)}x (compression bomb?)`);
      }
      listed.push(entry);
      zip.readEntry();
    });
    zip.readEntry();
  });
}

/**
 * Size, SHA-256, CRC-32 and first bytes of an entry's content, which goes
 * through `sink` when it is inspected (the sink hashes it). A stored (uncompressed) entry is read straight from its
 * byte range in 1 MiB chunks, about three times faster than yauzl's stream; a
 * compressed one is inflated by yauzl.
 */
async function entryContent(
  zip: yauzl.ZipFile,
  path: string,
  entry: yauzl.Entry,
  sink: EntrySink | undefined,
): Promise<{ bytes: number; sha256: string; crc: number; head: string }> {
  let stream: NodeJS.ReadableStream;
  if (entry.compressionMethod === 0) {
    const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
    if (entry.compressedSize === 0) {
      return { bytes: 0, sha256: sink ? sink.sha256() : createHash('sha256').digest('hex'), crc: 0, head: '' };
    }
    stream = createReadStream(path, { start: fileDataStart, end: fileDataStart + entry.compressedSize - 1, highWaterMark: 2 ** 20 });
  } else {
    stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) =>
      zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))),
    );
  }
  const hash = sink ? undefined : createHash('sha256');
  let crc = 0;
  let bytes = 0;
  let head = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (head.length < 5) head = Buffer.concat([head, chunk.subarray(0, 5 - head.length)]);
    if (sink) sink.update(chunk);
    else hash!.update(chunk);
    crc = crc32(chunk, crc);
    bytes += chunk.length;
  }
  return { bytes, sha256: sink ? sink.sha256() : hash!.digest('hex'), crc, head: head.toString('latin1') };
}
