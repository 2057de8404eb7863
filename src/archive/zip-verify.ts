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
 * audit trail). Called one entry at a time, so only one entry is in memory.
 */
export type EntryInspector = (entry: VerifiedEntry, content: Buffer) => Promise<void>;

/** An entry is buffered for the inspector only up to this size; a larger one is refused rather than risk the worker's memory. */
const MAX_INSPECTED_BYTES = 512 * 1024 * 1024;

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
  let zip: yauzl.ZipFile;
  try {
    zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
      yauzl.open(path, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true, decodeStrings: true }, (err, z) =>
        err ? reject(err) : resolve(z),
      ),
    );
  } catch (err) {
    throw new UnsafeZipError(`not a readable ZIP: ${(err as Error).message}`);
  }
  const entries: VerifiedEntry[] = [];
  const names = new Set<string>();
  let total = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (message: string) => {
        zip.close();
        reject(new UnsafeZipError(message));
      };
      zip.on('error', (err: Error) => fail(`corrupt ZIP: ${err.message}`));
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        const name = entry.fileName;
        if (entries.length + 1 > limits.maxEntries) return fail(`more than ${limits.maxEntries} entries`);
        if (name.endsWith('/')) return fail(`unexpected directory entry "${name}"`);
        if (name.includes('/') || name.includes('\\') || name.startsWith('.')) return fail(`unsafe entry name "${name}"`);
        if (names.has(name.toLowerCase())) return fail(`duplicate entry name "${name}"`);
        names.add(name.toLowerCase());
        const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
        if (mode === S_IFLNK) return fail(`entry "${name}" is a symbolic link`);
        if (mode !== 0 && mode !== S_IFREG) return fail(`entry "${name}" is not a regular file`);
        if (entry.isEncrypted()) return fail(`entry "${name}" is encrypted`);
        total += entry.uncompressedSize;
        if (total > limits.maxTotalUncompressed) return fail(`uncompressed size over ${limits.maxTotalUncompressed} bytes`);
        if (entry.compressedSize > 0 && entry.uncompressedSize / entry.compressedSize > limits.maxRatio) {
          return fail(`entry "${name}" expands ${Math.round(entry.uncompressedSize / entry.compressedSize)}x (compression bomb?)`);
        }
        const json = name.toLowerCase().endsWith('.json');
        if (inspect && entry.uncompressedSize > MAX_INSPECTED_BYTES) return fail(`entry "${name}" is too large to verify`);
        entryContent(zip, path, entry, inspect !== undefined)
          .then(async ({ bytes, sha256, crc, head, content }) => {
            if (json ? !/^\s*[[{]/.test(head) : head !== '%PDF-') return fail(`entry "${name}" is not a ${json ? 'JSON file' : 'PDF'}`);
            if (bytes !== entry.uncompressedSize)
              return fail(`entry "${name}" holds ${bytes} bytes, its header says ${entry.uncompressedSize}`);
            // yauzl does not check CRC-32, and stored entries are read as raw byte ranges: this is the only check.
            if (crc !== entry.crc32) return fail(`entry "${name}" fails its CRC-32 check (corrupted in the ZIP)`);
            const verified = { name, bytes, sha256 };
            if (inspect && content) await inspect(verified, content);
            entries.push(verified);
            zip.readEntry();
          })
          .catch((e: Error) => fail(e instanceof UnsafeZipError ? e.message : `entry "${name}": ${e.message}`));
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return entries;
}

/**
 * Size, SHA-256, CRC-32 and first bytes of an entry's content (and the content
 * itself when asked). A stored (uncompressed) entry is read straight from its
 * byte range in 1 MiB chunks, about three times faster than yauzl's stream; a
 * compressed one is inflated by yauzl.
 */
async function entryContent(
  zip: yauzl.ZipFile,
  path: string,
  entry: yauzl.Entry,
  keep: boolean,
): Promise<{ bytes: number; sha256: string; crc: number; head: string; content: Buffer | undefined }> {
  let stream: NodeJS.ReadableStream;
  if (entry.compressionMethod === 0) {
    const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
    if (entry.compressedSize === 0) {
      return { bytes: 0, sha256: createHash('sha256').digest('hex'), crc: 0, head: '', content: keep ? Buffer.alloc(0) : undefined };
    }
    stream = createReadStream(path, { start: fileDataStart, end: fileDataStart + entry.compressedSize - 1, highWaterMark: 2 ** 20 });
  } else {
    stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) =>
      zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))),
    );
  }
  const hash = createHash('sha256');
  let crc = 0;
  let bytes = 0;
  let head = Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (head.length < 5) head = Buffer.concat([head, chunk.subarray(0, 5 - head.length)]);
    hash.update(chunk);
    crc = crc32(chunk, crc);
    bytes += chunk.length;
    if (keep) chunks.push(chunk);
  }
  return {
    bytes,
    sha256: hash.digest('hex'),
    crc,
    head: head.toString('latin1'),
    content: keep ? Buffer.concat(chunks, bytes) : undefined,
  };
}
