import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { createInflateRaw, crc32, type InflateRaw } from 'node:zlib';

/**
 * A ZIP refused. `damaged` when its bytes look broken rather than crafted (truncated, unreadable, a CRC or structure
 * that does not add up): a transfer cut short or garbled in transit looks so, and another download may succeed. The
 * archive decides retry or refusal on this kind, never on the message.
 */
export class UnsafeZipError extends Error {
  override readonly name = 'UnsafeZipError';
  constructor(
    message: string,
    readonly damaged = false,
  ) {
    super(message);
  }
}

/** A ZIP over one of its limits (entries, size, ratio): refused whatever follows, so a download stops there. */
export class ZipOverLimit extends UnsafeZipError {}

/** A ZIP whose bytes look broken rather than crafted (see `UnsafeZipError.damaged`). */
const damaged = (message: string) => new UnsafeZipError(message, true);

export interface ZipLimits {
  maxEntries: number;
  maxTotalUncompressed: number;
  /** Largest uncompressed/compressed ratio allowed per entry (zip-bomb guard). */
  maxRatio: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = { maxEntries: 200, maxTotalUncompressed: 4 * 1024 ** 3, maxRatio: 200 };

/**
 * The most bytes a ZIP within `limits` can take: its contents (deflate can grow incompressible data by a few bytes
 * per block, well under 1/1000), and per entry its two headers, a data descriptor and their names, extra fields and
 * comment (each at most 64 KiB), then the end record. A download past it cannot be a ZIP the limits allow, so it is
 * refused while it downloads rather than written to disk whole.
 */
export function maxZipBytes(limits: ZipLimits): number {
  return limits.maxTotalUncompressed + Math.ceil(limits.maxTotalUncompressed / 1000) + limits.maxEntries * 400 * 1024 + 64 * 1024;
}

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

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_DIRECTORY = 0x06054b50;
const ZIP64_END_OF_DIRECTORY = 0x06064b50;
const ZIP64_LOCATOR = 0x07064b50;
const DESCRIPTOR_SIGNATURE = 0x08074b50;
const DESCRIPTOR = Buffer.from([0x50, 0x4b, 0x07, 0x08]);
const LOCAL_HEADER_BYTES = 30;
const CENTRAL_HEADER_BYTES = 46;
const END_BYTES = 22;
const ZIP64_END_BYTES = 56;
const ZIP64_LOCATOR_BYTES = 20;
/** A data descriptor with its signature: 16 bytes, or 24 with ZIP64 sizes. */
const DESCRIPTOR_BYTES = 16;
const ZIP64_DESCRIPTOR_BYTES = 24;
const FLAG_ENCRYPTED = 0x1;
const FLAG_DESCRIPTOR = 0x8;
const FLAG_UTF8 = 0x800;
/** The general-purpose flags an entry may carry: deflate options (bits 1 and 2), a data descriptor (3), a UTF-8 name (11). */
const ALLOWED_FLAGS = 0x2 | 0x4 | FLAG_DESCRIPTOR | FLAG_UTF8;
const MAX_32 = 0xffffffff;
const MAX_16 = 0xffff;
const ZIP64_EXTRA = 0x0001;
const UNICODE_PATH_EXTRA = 0x7075;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

/** One record of the central directory, as the file gives it (ZIP64 values applied). */
export interface DirectoryEntry {
  name: string;
  /** The name exactly as stored: a local header must carry the same bytes. */
  nameBytes: Buffer;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  /** Where its local header starts. */
  offset: number;
  /** Whether the record has a ZIP64 extended-information field. */
  zip64: boolean;
}

/** The central directory: its records in order, and where it starts (where the last entry must end). */
export interface CentralDirectory {
  entries: DirectoryEntry[];
  offset: number;
}

/**
 * Reads a ZIP without extracting it and checks that it holds only regular PDF
 * files (and JSON evidence beside them) with safe, unique names (no `..`, no
 * absolute paths, no symlinks), that every entry's content matches its CRC-32,
 * and that it is no compression bomb. Returns each entry's size and SHA-256.
 *
 * The central directory is read and judged first (`readDirectory`); then the
 * file is read front to back, as a sequential extractor (`jar x`, `bsdtar`)
 * reads it, and every byte must be accounted for: each local header is the
 * directory's next entry, at the offset it gives, with the same name, flags,
 * method, CRC-32 and sizes (from the data descriptor when one follows, which
 * must then be there and agree); nothing before the first entry, between two
 * entries or before the directory. What the directory shows is then what any
 * reader, from either end, would extract.
 */
export async function verifyZip(path: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS, inspect?: EntryInspector): Promise<VerifiedEntry[]> {
  // The whole directory is judged before any content is read (or shown to `inspect`).
  const directory = await readDirectory(path, limits);
  const walker = new ZipWalker(limits, inspect, directory);
  // Up to the directory's signature: the walk ends there, and `readDirectory` has judged the rest.
  const stream = createReadStream(path, { start: 0, end: directory.offset + 3, highWaterMark: 2 ** 20 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      await walker.update(chunk);
      if (walker.stopped) break;
    }
  } catch (err) {
    throw damaged(`not a readable ZIP: ${(err as Error).message}`);
  } finally {
    stream.destroy();
  }
  return walker.conclude(directory);
}

/** Why an entry's name is refused (a directory, a path, a hidden, empty or duplicate name), if it is; adds it to `names`. */
export function nameProblem(name: string, names: Map<string, string>): string | undefined {
  if (name.endsWith('/')) return `unexpected directory entry "${name}"`;
  if (name === '') return 'an entry has an empty name';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (name.includes('/') || name.includes('\\') || name.startsWith('.') || /[\u0000-\u001f\u007f]/.test(name))
    return `unsafe entry name ${JSON.stringify(name)}`;
  const key = nameKey(name);
  const other = names.get(key);
  if (other !== undefined)
    return other === name
      ? `duplicate entry name "${name}"`
      : `duplicate entry name "${name}" (the same file as "${other}" where names are compared case-insensitively, in Unicode NFC)`;
  names.set(key, name);
  return undefined;
}

/**
 * A name as a file system that folds case and normalises Unicode sees it (macOS, Windows): NFC, case-folded
 * (`ß` as `ss`), without the trailing dots and spaces Windows drops. Two entries with the same key would be
 * one file there, the later written over the earlier. (Names with a `/` or `\` are refused outright, so no
 * `a/../b` form reaches this.)
 */
export function nameKey(name: string): string {
  return name
    .normalize('NFC')
    .toUpperCase()
    .toLowerCase()
    .normalize('NFC')
    .replace(/[. ]+$/, '');
}

/** Whether an entry's first bytes are what its name says (a PDF, or JSON evidence); the problem if not. */
export function contentProblem(name: string, head: string): string | undefined {
  const json = name.toLowerCase().endsWith('.json');
  if (json ? !/^\s*[[{]/.test(head) : head !== '%PDF-') return `entry "${name}" is not a ${json ? 'JSON file' : 'PDF'}`;
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** An entry's name from its bytes: UTF-8 when its flags say so (and it must be valid), else ASCII only. */
export function decodeName(bytes: Buffer, flags: number): string {
  if (flags & FLAG_UTF8) {
    try {
      return utf8.decode(bytes);
    } catch {
      throw new UnsafeZipError(`entry name ${JSON.stringify(bytes.toString('latin1'))} is marked UTF-8 but is not`);
    }
  }
  // Without the flag, readers decode non-ASCII bytes differently (CP437, the system's code page, UTF-8): one name, several files.
  if (bytes.some((b) => b >= 0x80))
    throw new UnsafeZipError(`entry name ${JSON.stringify(bytes.toString('latin1'))} is neither ASCII nor marked UTF-8`);
  return bytes.toString('latin1');
}

/** One extra field's data (by its id), if the extra block holds it. */
function extraField(extra: Buffer, id: number): Buffer | undefined {
  for (let i = 0; i + 4 <= extra.length;) {
    const size = extra.readUInt16LE(i + 2);
    if (i + 4 + size > extra.length) return undefined;
    if (extra.readUInt16LE(i) === id) return extra.subarray(i + 4, i + 4 + size);
    i += 4 + size;
  }
  return undefined;
}

/** An Info-ZIP Unicode path field naming the entry otherwise: readers that honour it would write another file. */
function unicodePathProblem(name: string, extra: Buffer): string | undefined {
  const field = extraField(extra, UNICODE_PATH_EXTRA);
  if (!field) return undefined;
  let other: string;
  try {
    other = utf8.decode(field.subarray(5));
  } catch {
    other = field.subarray(5).toString('latin1');
  }
  return other === name ? undefined : `entry "${name}" carries another name (${JSON.stringify(other)}) in its Unicode path field`;
}

/** A little-endian 64-bit size or offset, refused past what a number holds exactly. */
function u64(buf: Buffer, at: number): number {
  const value = buf.readBigUInt64LE(at);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw damaged(`corrupt ZIP: a 64-bit size or offset of ${value}`);
  return Number(value);
}

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

/**
 * Reads and judges the central directory from the end of the file, without reading any entry: the end record
 * must end the file (no comment, nothing after it), preceded only by a ZIP64 end record and locator when the
 * file needs them, and the directory must end exactly where they (or the end record) start, with exactly the
 * records the end record counts; each record has a safe, unique name, is a regular file, unencrypted, stored or
 * deflated, within the limits, and starts after the one before it (in the directory's order, as the entries
 * must lie in the file).
 */
export async function readDirectory(path: string, limits: ZipLimits): Promise<CentralDirectory> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (err) {
    throw damaged(`not a readable ZIP: ${(err as Error).message}`);
  }
  try {
    return await directoryOf(file, limits);
  } finally {
    await file.close();
  }
}

async function directoryOf(file: FileHandle, limits: ZipLimits): Promise<CentralDirectory> {
  const size = (await file.stat()).size;
  const read = async (position: number, length: number): Promise<Buffer> => {
    const buf = Buffer.alloc(length);
    if (position < 0 || position + length > size) throw damaged(`corrupt ZIP: a record points outside the file (byte ${position})`);
    const { bytesRead } = await file.read(buf, 0, length, position);
    if (bytesRead !== length) throw damaged(`not a readable ZIP: the file ends at byte ${position + bytesRead}`);
    return buf;
  };

  if (size < END_BYTES) throw damaged('not a readable ZIP: no end of central directory record');
  const endAt = size - END_BYTES;
  const end = await read(endAt, END_BYTES);
  if (end.readUInt32LE(0) !== END_OF_DIRECTORY) {
    // Not at the very end: say what follows it, if there is one (a comment, or other bytes).
    const tailLength = Math.min(size, END_BYTES + MAX_16);
    const tail = await read(size - tailLength, tailLength);
    for (let i = tail.length - END_BYTES; i >= 0; i--) {
      if (tail.readUInt32LE(i) !== END_OF_DIRECTORY) continue;
      const after = tail.length - i - END_BYTES;
      if (tail.readUInt16LE(i + 20) === after) {
        throw new UnsafeZipError(
          `the ZIP carries a comment of ${after} bytes after its end record (refused: nothing may follow the end record)`,
        );
      }
      throw new UnsafeZipError(`${after} bytes follow the end of central directory record`);
    }
    throw damaged('not a readable ZIP: no end of central directory record');
  }
  const commentLength = end.readUInt16LE(20);
  if (commentLength !== 0)
    throw new UnsafeZipError(`the end record announces a comment of ${commentLength} bytes (a ZIP comment is refused)`);
  let disk = end.readUInt16LE(4);
  let directoryDisk = end.readUInt16LE(6);
  let onThisDisk = end.readUInt16LE(8);
  let count = end.readUInt16LE(10);
  let directorySize = end.readUInt32LE(12);
  let directoryOffset = end.readUInt32LE(16);
  /** Where the directory must end: at the ZIP64 end record if there is one, else at the end record. */
  let directoryEnd = endAt;

  const locatorAt = endAt - ZIP64_LOCATOR_BYTES;
  const locator = locatorAt >= 0 ? await read(locatorAt, ZIP64_LOCATOR_BYTES) : undefined;
  if (locator?.readUInt32LE(0) === ZIP64_LOCATOR) {
    if (locator.readUInt32LE(4) !== 0 || locator.readUInt32LE(16) > 1)
      throw new UnsafeZipError('a ZIP split over several disks is refused');
    const recordAt = u64(locator, 8);
    const record = await read(recordAt, ZIP64_END_BYTES);
    if (record.readUInt32LE(0) !== ZIP64_END_OF_DIRECTORY) throw damaged('corrupt ZIP: no ZIP64 end record where its locator points');
    if (u64(record, 4) !== ZIP64_END_BYTES - 12) throw new UnsafeZipError('the ZIP64 end record carries extensible data (refused)');
    if (recordAt + ZIP64_END_BYTES !== locatorAt) {
      throw recordAt + ZIP64_END_BYTES < locatorAt
        ? new UnsafeZipError(`${locatorAt - recordAt - ZIP64_END_BYTES} bytes between the ZIP64 end record and its locator`)
        : damaged('corrupt ZIP: the ZIP64 end record overlaps its locator');
    }
    const wide = {
      disk: record.readUInt32LE(16),
      directoryDisk: record.readUInt32LE(20),
      onThisDisk: u64(record, 24),
      count: u64(record, 32),
      directorySize: u64(record, 40),
      directoryOffset: u64(record, 48),
    };
    // Each field of the end record says the same, or defers to the ZIP64 record with its all-ones value.
    const agrees = (short: number, sentinel: number, long: number) => short === sentinel || short === long;
    if (
      !agrees(disk, MAX_16, wide.disk) ||
      !agrees(directoryDisk, MAX_16, wide.directoryDisk) ||
      !agrees(onThisDisk, MAX_16, wide.onThisDisk) ||
      !agrees(count, MAX_16, wide.count) ||
      !agrees(directorySize, MAX_32, wide.directorySize) ||
      !agrees(directoryOffset, MAX_32, wide.directoryOffset)
    ) {
      throw new UnsafeZipError('the end record and the ZIP64 end record disagree');
    }
    ({ disk, directoryDisk, onThisDisk, count, directorySize, directoryOffset } = wide);
    directoryEnd = recordAt;
  } else if (count === MAX_16 || directorySize === MAX_32 || directoryOffset === MAX_32) {
    throw damaged('corrupt ZIP: the end record defers to a ZIP64 end record that is not there');
  }
  if (disk !== 0 || directoryDisk !== 0 || onThisDisk !== count) throw new UnsafeZipError('a ZIP split over several disks is refused');
  if (count > limits.maxEntries) throw new ZipOverLimit(`more than ${limits.maxEntries} entries`);
  if (directoryOffset + directorySize !== directoryEnd) {
    if (directoryOffset + directorySize > directoryEnd) throw damaged('corrupt ZIP: the central directory runs past its end record');
    const gap = directoryEnd - directoryOffset - directorySize;
    // Bytes put before a whole ZIP (`cat stub.bin file.zip`) shift everything, and the directory is where its size says.
    if (count > 0 && (await read(directoryEnd - directorySize, 4)).readUInt32LE(0) === CENTRAL_HEADER) {
      throw new UnsafeZipError(`${gap} bytes before the first entry (which the central directory's offsets do not count)`);
    }
    throw new UnsafeZipError(`${gap} bytes between the central directory and the end record`);
  }
  // Bounds what is read into memory: no record is longer than this.
  if (directorySize > count * (CENTRAL_HEADER_BYTES + 3 * MAX_16))
    throw damaged('corrupt ZIP: the central directory is larger than its records can be');
  const records = await read(directoryOffset, directorySize);

  const entries: DirectoryEntry[] = [];
  const names = new Map<string, string>();
  let total = 0;
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + CENTRAL_HEADER_BYTES > records.length || records.readUInt32LE(at) !== CENTRAL_HEADER) {
      throw damaged(`corrupt ZIP: no central directory record at byte ${directoryOffset + at}`);
    }
    const flags = records.readUInt16LE(at + 8);
    const method = records.readUInt16LE(at + 10);
    const crc = records.readUInt32LE(at + 16);
    let compressedSize = records.readUInt32LE(at + 20);
    let uncompressedSize = records.readUInt32LE(at + 24);
    const nameLength = records.readUInt16LE(at + 28);
    const extraLength = records.readUInt16LE(at + 30);
    const entryCommentLength = records.readUInt16LE(at + 32);
    let diskStart = records.readUInt16LE(at + 34);
    const externalAttributes = records.readUInt32LE(at + 38);
    let offset = records.readUInt32LE(at + 42);
    const nameAt = at + CENTRAL_HEADER_BYTES;
    const next = nameAt + nameLength + extraLength + entryCommentLength;
    if (next > records.length) throw damaged(`corrupt ZIP: central directory record ${i + 1} runs past the directory`);
    const nameBytes = Buffer.from(records.subarray(nameAt, nameAt + nameLength));
    const extra = records.subarray(nameAt + nameLength, nameAt + nameLength + extraLength);
    at = next;

    // ZIP64: each all-ones field is in the extended-information field, in this order.
    const wide = extraField(extra, ZIP64_EXTRA);
    let cursor = 0;
    const widen = (value: number, sentinel: number, bytes: 4 | 8) => {
      if (value !== sentinel) return value;
      if (!wide || cursor + bytes > wide.length) throw damaged(`corrupt ZIP: central directory record ${i + 1} lacks its ZIP64 sizes`);
      const v = bytes === 8 ? u64(wide, cursor) : wide.readUInt32LE(cursor);
      cursor += bytes;
      return v;
    };
    uncompressedSize = widen(uncompressedSize, MAX_32, 8);
    compressedSize = widen(compressedSize, MAX_32, 8);
    offset = widen(offset, MAX_32, 8);
    diskStart = widen(diskStart, MAX_16, 4);
    if (diskStart !== 0) throw new UnsafeZipError('a ZIP split over several disks is refused');

    const name = decodeName(nameBytes, flags);
    const unsafe = nameProblem(name, names) ?? unicodePathProblem(name, extra);
    if (unsafe) throw new UnsafeZipError(unsafe);
    const mode = (externalAttributes >>> 16) & S_IFMT;
    if (mode === S_IFLNK) throw new UnsafeZipError(`entry "${name}" is a symbolic link`);
    if (mode !== 0 && mode !== S_IFREG) throw new UnsafeZipError(`entry "${name}" is not a regular file`);
    const flagProblem = flagsProblem(name, flags, method);
    if (flagProblem) throw new UnsafeZipError(flagProblem);
    if (method === 0 && compressedSize !== uncompressedSize)
      throw new UnsafeZipError(`entry "${name}" is stored, yet its sizes differ (${compressedSize} and ${uncompressedSize} bytes)`);
    total += uncompressedSize;
    if (total > limits.maxTotalUncompressed) throw new ZipOverLimit(`uncompressed size over ${limits.maxTotalUncompressed} bytes`);
    if (compressedSize > 0 && uncompressedSize / compressedSize > limits.maxRatio) {
      throw new ZipOverLimit(`entry "${name}" expands ${Math.round(uncompressedSize / compressedSize)}x (compression bomb?)`);
    }
    const before = entries.at(-1);
    if (before && offset <= before.offset) {
      throw new UnsafeZipError(
        offset === before.offset
          ? `entries "${before.name}" and "${name}" of the central directory are one entry (both at byte ${offset}): an entry listed twice`
          : `the central directory lists "${name}" (at byte ${offset}) after "${before.name}" (at byte ${before.offset}), out of the file's order`,
      );
    }
    if (offset + LOCAL_HEADER_BYTES > directoryOffset) throw damaged(`corrupt ZIP: entry "${name}" starts past the central directory`);
    entries.push({ name, nameBytes, flags, method, crc, compressedSize, uncompressedSize, offset, zip64: wide !== undefined });
  }
  if (at !== records.length) {
    // More records than the end record counts: readers that go by the directory's size would see entries the others do not.
    throw new UnsafeZipError(`the central directory holds ${records.length - at} bytes after the ${count} records its end record counts`);
  }
  return { entries, offset: directoryOffset };
}

/** Why an entry's flags or compression method are refused, if they are. */
function flagsProblem(name: string, flags: number, method: number): string | undefined {
  if (flags & FLAG_ENCRYPTED) return `entry "${name}" is encrypted`;
  if (flags & ~ALLOWED_FLAGS) return `entry "${name}" has general-purpose flags ${hex(flags)}, which are refused`;
  if (method !== 0 && method !== 8) return `entry "${name}" uses compression method ${method}`;
  return undefined;
}

/** What a local header says of its entry (ZIP64 sizes applied). */
interface LocalHeader {
  name: string;
  nameBytes: Buffer;
  offset: number;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  /** Whether the header has a ZIP64 extended-information field. */
  zip64: boolean;
}

/** What the walk found of one entry. */
interface SeenEntry extends VerifiedEntry {
  header: LocalHeader;
  /** The content's CRC-32. */
  crc: number;
  compressedBytes: number;
  /** The data descriptor's length after the data (0 for none). */
  descriptorBytes: number;
}

/** The entry being read. */
interface Current {
  header: LocalHeader;
  name: string;
  method: number;
  /** A data descriptor follows the data (flag bit 3). */
  descriptor: boolean;
  /** The data's length, when known before reading it: from the local header, or from the directory. */
  compressedSize: number | undefined;
  /** A stored entry whose length only the directory gives: the data ends there, at its descriptor. */
  limit: number | undefined;
  declaredCrc: number;
  declaredSize: number | undefined;
  compressedSeen: number;
  bytes: number;
  crc: number;
  /** Hashes the entry, unless a sink does. */
  hash: Hash | undefined;
  head: Buffer;
  sink: EntrySink | undefined;
  inflater: InflateRaw | undefined;
  inflated: Promise<void> | undefined;
  /** The deflate stream has ended (perhaps before the data has). */
  inflaterEnded: boolean;
}

/** Why a local header differs from the directory's record of its entry, if it does. */
function headerMismatch(listed: DirectoryEntry, local: LocalHeader): string | undefined {
  const differs = (what: string, there: string | number, here: string | number) =>
    `entry "${listed.name}" in the central directory does not match the entry in the file: ${what} ${there} there, ${here} in its local header (at byte ${local.offset})`;
  if (!listed.nameBytes.equals(local.nameBytes)) return differs('name', JSON.stringify(listed.name), JSON.stringify(local.name));
  if (listed.flags !== local.flags) return differs('flags', hex(listed.flags), hex(local.flags));
  if (listed.method !== local.method) return differs('compression method', listed.method, local.method);
  // With a data descriptor the header's CRC-32 and sizes are zero (or already right); the descriptor's are checked.
  const descriptor = (listed.flags & FLAG_DESCRIPTOR) !== 0;
  const agrees = (there: number, here: number) => here === there || (descriptor && here === 0);
  if (!agrees(listed.crc, local.crc)) return differs('CRC-32', hex(listed.crc), hex(local.crc));
  if (!agrees(listed.compressedSize, local.compressedSize)) return differs('compressed size', listed.compressedSize, local.compressedSize);
  if (!agrees(listed.uncompressedSize, local.uncompressedSize)) return differs('size', listed.uncompressedSize, local.uncompressedSize);
  return undefined;
}

/** Why what the walk found of an entry differs from the directory's record of it, if it does. */
function entryMismatch(listed: DirectoryEntry, seen: SeenEntry): string | undefined {
  const differs = (what: string, there: string | number, here: string | number) =>
    `entry "${listed.name}" in the central directory does not match the entry in the file: ${what} ${there} there, ${here} in the file`;
  if (seen.descriptorBytes > 0 && listed.method === 0 && seen.compressedBytes < listed.compressedSize) {
    return endsEarly(listed.name, seen.compressedBytes, listed.compressedSize);
  }
  if (listed.crc !== seen.crc) return differs('CRC-32', hex(listed.crc), hex(seen.crc));
  if (listed.uncompressedSize !== seen.bytes) return differs('size', listed.uncompressedSize, seen.bytes);
  if (listed.compressedSize !== seen.compressedBytes) return differs('compressed size', listed.compressedSize, seen.compressedBytes);
  if (seen.descriptorBytes === ZIP64_DESCRIPTOR_BYTES && !zip64Descriptor(listed, seen.header)) {
    return `entry "${listed.name}" has a ZIP64 data descriptor, though neither it nor its sizes are ZIP64`;
  }
  return undefined;
}

/** Whether an entry's data descriptor may have 8-byte sizes: a ZIP64 entry, or sizes that need them. */
function zip64Descriptor(listed: DirectoryEntry, local: LocalHeader): boolean {
  return local.zip64 || listed.zip64 || listed.compressedSize >= MAX_32 || listed.uncompressedSize >= MAX_32;
}

/** A stored entry with a data descriptor that a sequential reader ends early, at a descriptor inside its data. */
const endsEarly = (name: string, bytes: number, length: number) =>
  `entry "${name}" holds a data descriptor of its own first ${bytes} bytes: a sequential reader would end it there, not after the ${length} bytes the central directory gives`;

const hidden = (name: string, offset: number) =>
  `entry "${name}" (at byte ${offset}) is hidden from the central directory: a sequential extractor would write it`;

/**
 * Reads a ZIP front to back, as a sequential extractor does, and verifies each entry from its local header and
 * data: CRC-32, SHA-256, size and first bytes, its content shown to `inspect` as soon as the entry ends. Nothing
 * may come before the first local header or between two entries: the walk ends at the central directory's
 * signature, and `conclude` checks that the directory lists exactly the entries walked, in order, at the
 * offsets walked, with the same names, flags, methods, CRC-32 and sizes.
 *
 * Given the directory up front (`verifyZip`), each header is matched with it as it comes, and the directory
 * gives the length of an entry whose sizes follow its data. Without it (the download pass), a stored entry with
 * a data descriptor ends at the first descriptor that matches the bytes before it, as a sequential reader ends
 * it; a deflated one with a descriptor stops the walk (`fallbackReason`), for `verifyZip` to read the file.
 */
export class ZipWalker {
  private carry: Buffer = Buffer.alloc(0);
  /** Bytes of the ZIP received before the current chunk. */
  private received = 0;
  /** Offset in the ZIP of the first byte of the buffer being read (the carry, then the chunk). */
  private base = 0;
  private state: 'header' | 'data' | 'descriptor' | 'rest' | 'fallback' | 'failed' = 'header';
  private current: Current | undefined;
  private readonly seen: SeenEntry[] = [];
  private readonly names = new Map<string, string>();
  private total = 0;
  /** Where the walk met the central directory (or the end records). */
  private directoryAt = -1;
  /** Where the walk met bytes that are neither a local header nor the directory. */
  private strayAt: number | undefined;
  private failure: Error | undefined;
  /** The first problem the inspector found (a seal, the audit trail): named once the ZIP itself is judged sound. */
  private inspectionFailure: Error | undefined;
  private stoppedFor = '';

  constructor(
    private readonly limits: ZipLimits,
    private readonly inspector?: EntryInspector,
    private readonly directory?: CentralDirectory,
  ) {}

  /** Whether the walk has stopped: at the central directory, on a problem, or at a layout it leaves to `verifyZip`. */
  get stopped(): boolean {
    return this.state === 'rest' || this.state === 'fallback' || this.state === 'failed';
  }

  /** What the walk found wrong with the ZIP itself so far (not what the inspector found in an entry). */
  get problem(): Error | undefined {
    return this.failure;
  }

  /** Why the file must be verified on its own (`verifyZip`), if the walk could not follow it to the directory. */
  fallbackReason(): string | undefined {
    if (this.failure || this.state === 'rest') return undefined;
    if (this.state === 'fallback') return this.stoppedFor;
    return this.state === 'header' ? 'the download ended before the central directory' : 'the download ended inside an entry';
  }

  /** Takes the next chunk of the ZIP. Never throws: a problem is kept for `conclude`, and the rest is ignored. */
  async update(chunk: Buffer): Promise<void> {
    if (this.stopped) return;
    try {
      await this.take(chunk);
    } catch (err) {
      this.fail(err as Error);
    }
  }

  /**
   * Once the walk is over: the verified entries, if the directory lists exactly the entries walked. A problem the
   * walk found comes after the directory's own verdict (it was judged before this is called), and what the
   * inspector found only for a sound ZIP.
   */
  conclude(directory: CentralDirectory): VerifiedEntry[] {
    const { entries: listed } = directory;
    // The entries walked, as far as the walk went, against the directory: a disagreement is the directory's verdict.
    for (const [i, seen] of this.seen.entries()) {
      const entry = listed[i];
      if (!entry || seen.header.offset < entry.offset) throw new UnsafeZipError(hidden(seen.name, seen.header.offset));
      if (seen.header.offset > entry.offset) {
        throw new UnsafeZipError(`entry "${entry.name}" in the central directory is at byte ${entry.offset}, inside the entry before it`);
      }
      const problem = headerMismatch(entry, seen.header) ?? entryMismatch(entry, seen);
      if (problem) throw new UnsafeZipError(problem);
    }
    // The entry the walk was in when it stopped, if it had one: its header at least.
    const current = this.current?.header;
    if (current) {
      const entry = listed[this.seen.length];
      if (!entry || current.offset < entry.offset) throw new UnsafeZipError(hidden(current.name, current.offset));
      const problem = current.offset === entry.offset ? headerMismatch(entry, current) : undefined;
      if (problem) throw new UnsafeZipError(problem);
    }
    // Stray bytes where an entry or the directory should start, named with what the directory tells of them.
    if (this.strayAt !== undefined) throw new UnsafeZipError(this.strayBytes(this.strayAt, directory));
    if (this.failure) throw this.failure;
    if (this.state === 'fallback') throw new UnsafeZipError(`the ZIP was not read to its end: ${this.stoppedFor}`);
    if (this.state !== 'rest') {
      throw damaged(this.current ? `the file ends inside entry "${this.current.name}"` : 'the file ends before its central directory');
    }
    const missing = listed[this.seen.length];
    if (missing)
      throw new UnsafeZipError(`the central directory lists entry "${missing.name}" at byte ${missing.offset}, where the file holds none`);
    if (this.directoryAt !== directory.offset) {
      throw new UnsafeZipError(`the central directory starts at byte ${directory.offset}, but the entries end at byte ${this.directoryAt}`);
    }
    if (this.inspectionFailure) throw this.inspectionFailure;
    return this.seen.map(({ name, bytes, sha256 }) => ({ name, bytes, sha256 }));
  }

  private fail(err: Error): void {
    this.failure = err instanceof UnsafeZipError ? err : new UnsafeZipError(err.message);
    this.state = 'failed';
    this.current?.inflater?.destroy();
  }

  private fallback(reason: string): void {
    this.stoppedFor = reason;
    this.state = 'fallback';
    this.current?.inflater?.destroy();
  }

  private async take(chunk: Buffer): Promise<void> {
    const before = this.received;
    this.received += chunk.length;
    let buf = chunk;
    this.base = before;
    if (this.carry.length > 0 && this.heldBackIsContent(chunk)) {
      // The usual case inside a stored entry: the bytes held back were content after all. Taking them
      // alone spares copying every chunk behind them (a copy of the whole ZIP, about 0.2 s per GiB).
      this.content(this.current!, this.carry);
    } else if (this.carry.length > 0) {
      buf = Buffer.concat([this.carry, chunk]);
      this.base = before - this.carry.length;
    }
    this.carry = Buffer.alloc(0);
    let at = 0;
    while (at < buf.length) {
      const state = this.state;
      let used;
      if (state === 'header') used = this.header(buf, at);
      else if (state === 'data') used = await this.data(buf, at);
      else if (state === 'descriptor') used = await this.descriptor(buf, at);
      else return;
      at += used;
      if (used === 0 && this.state === state) break; // needs more bytes
    }
    // What is left is a partial header or descriptor: a few bytes, copied so the chunk can be freed.
    if (!this.stopped) this.carry = Buffer.from(buf.subarray(at));
  }

  /** Whether the few bytes held back at the end of a stored entry's chunk cannot start a data descriptor. */
  private heldBackIsContent(chunk: Buffer): boolean {
    const entry = this.current;
    if (this.state !== 'data' || !entry || entry.compressedSize !== undefined || this.carry.length >= DESCRIPTOR.length) return false;
    // A signature starting in what was held back is only visible whole with enough of the new chunk.
    if (chunk.length < DESCRIPTOR.length) return false;
    const found = Buffer.concat([this.carry, chunk.subarray(0, DESCRIPTOR.length)]).indexOf(DESCRIPTOR);
    return found < 0 || found >= this.carry.length;
  }

  /** What bytes that are no local header (nor the directory) at `offset` are, for the refusal: what the directory, if known, tells of them. */
  private strayBytes(offset: number, directory: CentralDirectory | undefined): string {
    const previous = this.seen.at(-1)?.name;
    if (!directory) {
      return previous === undefined
        ? 'bytes before the first entry: the file does not start with a local header'
        : `bytes between entries: at byte ${offset}, after entry "${previous}", neither a local header nor the central directory`;
    }
    const listed = directory.entries[this.seen.length];
    const expected = listed ? listed.offset : directory.offset;
    if (expected <= offset) {
      return `no local header at byte ${offset}, where ${listed ? `the central directory puts entry "${listed.name}"` : 'the central directory should start'}`;
    }
    const where =
      previous === undefined
        ? 'before the first entry'
        : listed
          ? `between entries "${previous}" and "${listed.name}"`
          : `between the last entry ("${previous}") and the central directory`;
    return `${expected - offset} bytes ${where} (at byte ${offset})`;
  }

  /** Reads a local header at `at`; returns the bytes used, or 0 if more are needed. */
  private header(buf: Buffer, at: number): number {
    if (buf.length - at < 4) return 0;
    const offset = this.base + at;
    const signature = buf.readUInt32LE(at);
    if (signature === CENTRAL_HEADER || signature === END_OF_DIRECTORY || signature === ZIP64_END_OF_DIRECTORY) {
      this.directoryAt = offset;
      this.state = 'rest';
      return buf.length - at;
    }
    if (signature !== LOCAL_HEADER) {
      this.strayAt = offset;
      throw new UnsafeZipError(this.strayBytes(offset, this.directory));
    }
    if (buf.length - at < LOCAL_HEADER_BYTES) return 0;
    const flags = buf.readUInt16LE(at + 6);
    const method = buf.readUInt16LE(at + 8);
    const nameLength = buf.readUInt16LE(at + 26);
    const extraLength = buf.readUInt16LE(at + 28);
    const length = LOCAL_HEADER_BYTES + nameLength + extraLength;
    if (buf.length - at < length) return 0;
    const nameBytes = Buffer.from(buf.subarray(at + LOCAL_HEADER_BYTES, at + LOCAL_HEADER_BYTES + nameLength));
    const extra = buf.subarray(at + LOCAL_HEADER_BYTES + nameLength, at + length);
    const name = decodeName(nameBytes, flags);
    let compressedSize = buf.readUInt32LE(at + 18);
    let uncompressedSize = buf.readUInt32LE(at + 22);
    if (compressedSize === MAX_32 || uncompressedSize === MAX_32) {
      const zip64 = zip64Sizes(extra);
      if (!zip64) throw new UnsafeZipError(`entry "${name}" has ZIP64 sizes without a ZIP64 field`);
      compressedSize = zip64.compressed;
      uncompressedSize = zip64.uncompressed;
    }
    const local: LocalHeader = {
      name,
      nameBytes,
      offset,
      flags,
      method,
      crc: buf.readUInt32LE(at + 14),
      compressedSize,
      uncompressedSize,
      zip64: extraField(extra, ZIP64_EXTRA) !== undefined,
    };

    // Given the directory, this header must be its next entry, where it says, as it says.
    const listed = this.directory?.entries[this.seen.length];
    if (this.directory) {
      if (!listed || offset < listed.offset) throw new UnsafeZipError(hidden(name, offset));
      if (offset > listed.offset) {
        throw new UnsafeZipError(`entry "${listed.name}" in the central directory is at byte ${listed.offset}, inside the entry before it`);
      }
      const problem = headerMismatch(listed, local);
      if (problem) throw new UnsafeZipError(problem);
    }
    if (this.seen.length + 1 > this.limits.maxEntries) throw new ZipOverLimit(`more than ${this.limits.maxEntries} entries`);
    const unsafe = nameProblem(name, this.names) ?? unicodePathProblem(name, extra) ?? flagsProblem(name, flags, method);
    if (unsafe) throw new UnsafeZipError(unsafe);

    const descriptor = (flags & FLAG_DESCRIPTOR) !== 0;
    let known: number | undefined = descriptor ? undefined : compressedSize;
    let declaredSize: number | undefined = descriptor ? undefined : uncompressedSize;
    let limit: number | undefined;
    if (descriptor && listed) {
      // The directory gives the data's length: a deflated entry is read to it; a stored one must not end before it.
      if (method === 8) known = listed.compressedSize;
      else limit = listed.compressedSize;
      declaredSize = listed.uncompressedSize;
    } else if (descriptor && method === 8) {
      this.fallback(`entry "${name}" is deflated with its sizes after the data`);
      return buf.length - at;
    }
    if (!descriptor) {
      this.total += method === 0 ? compressedSize : uncompressedSize;
      if (this.total > this.limits.maxTotalUncompressed)
        throw new ZipOverLimit(`uncompressed size over ${this.limits.maxTotalUncompressed} bytes`);
      if (method === 0 && compressedSize !== uncompressedSize)
        throw new UnsafeZipError(`entry "${name}" is stored, yet its sizes differ (${compressedSize} and ${uncompressedSize} bytes)`);
      if (method === 8 && compressedSize > 0 && uncompressedSize / compressedSize > this.limits.maxRatio) {
        throw new ZipOverLimit(`entry "${name}" expands ${Math.round(uncompressedSize / compressedSize)}x (compression bomb?)`);
      }
    }
    const sink = this.inspector?.open(name);
    if (sink?.maxBytes !== undefined && declaredSize !== undefined && declaredSize > sink.maxBytes)
      throw new UnsafeZipError(`entry "${name}" is too large to verify`);
    const current: Current = {
      header: local,
      name,
      method,
      descriptor,
      compressedSize: known,
      limit,
      declaredCrc: local.crc,
      declaredSize,
      compressedSeen: 0,
      bytes: 0,
      crc: 0,
      hash: sink ? undefined : createHash('sha256'),
      head: Buffer.alloc(0),
      sink,
      inflater: undefined,
      inflated: undefined,
      inflaterEnded: false,
    };
    if (method === 8) {
      const inflater = createInflateRaw();
      inflater.on('data', (out: Buffer) => {
        try {
          this.content(current, out);
        } catch (err) {
          this.fail(err as Error);
        }
      });
      current.inflater = inflater;
      // Settles however the inflater stops (ended, failed, or destroyed by `fail`), so nothing waits forever.
      current.inflated = new Promise<void>((resolve) => {
        inflater.once('end', () => {
          current.inflaterEnded = true;
          resolve();
        });
        inflater.once('close', resolve);
        inflater.once('error', (err) => {
          this.fail(new UnsafeZipError(`entry "${name}" does not inflate: ${err.message}`));
          resolve();
        });
      });
    }
    this.current = current;
    this.state = 'data';
    return length;
  }

  /** The entry's uncompressed bytes: CRC-32, size, first bytes, and the SHA-256 (here or in the inspector's sink). */
  private content(entry: Current, bytes: Buffer): void {
    entry.crc = crc32(bytes, entry.crc);
    if (entry.head.length < 5) entry.head = Buffer.concat([entry.head, bytes.subarray(0, 5 - entry.head.length)]);
    entry.bytes += bytes.length;
    if (entry.sink) {
      if (entry.sink.maxBytes !== undefined && entry.bytes > entry.sink.maxBytes)
        throw new UnsafeZipError(`entry "${entry.name}" is too large to verify`);
      entry.sink.update(bytes);
    } else entry.hash!.update(bytes);
    if (entry.method === 8 && entry.declaredSize !== undefined && entry.bytes > entry.declaredSize) {
      throw new UnsafeZipError(`entry "${entry.name}" inflates past the ${entry.declaredSize} bytes its header says`);
    }
  }

  /** Reads entry data from `buf[at]`; returns the bytes used, or 0 if more are needed. */
  private async data(buf: Buffer, at: number): Promise<number> {
    const entry = this.current!;
    if (entry.compressedSize !== undefined) {
      if (entry.inflaterEnded && entry.compressedSeen < entry.compressedSize) throw this.deflateEndsEarly(entry);
      const n = Math.min(entry.compressedSize - entry.compressedSeen, buf.length - at);
      const piece = buf.subarray(at, at + n);
      entry.compressedSeen += n;
      if (entry.inflater) await this.inflate(entry.inflater, piece);
      else this.content(entry, piece);
      if (entry.compressedSeen === entry.compressedSize) {
        await this.dataEnded(entry);
        if (entry.descriptor) this.state = 'descriptor';
        else await this.endEntry(entry, entry.declaredCrc, entry.declaredSize!, 0);
      }
      return n;
    }
    // A stored entry whose sizes follow it: it ends at a data descriptor whose CRC-32 and sizes match the bytes
    // before it, as a sequential reader ends it. Given the directory, at the length it gives (`limit`), at the latest.
    const limit = entry.limit === undefined ? Infinity : at + (entry.limit - entry.bytes);
    let from = at;
    for (;;) {
      const found = buf.indexOf(DESCRIPTOR, from);
      if (found < 0 || found >= limit) {
        if (limit <= buf.length) {
          // All the data the directory gives: its descriptor must follow, right here.
          this.content(entry, buf.subarray(from, limit));
          entry.compressedSeen = entry.bytes;
          this.state = 'descriptor';
          return limit - at;
        }
        // The last bytes may be the start of a signature: they wait for the next chunk.
        const safe = Math.max(from, buf.length - (DESCRIPTOR.length - 1));
        this.content(entry, buf.subarray(from, safe));
        return safe - at;
      }
      this.content(entry, buf.subarray(from, found));
      if (found + DESCRIPTOR_BYTES > buf.length) return found - at;
      const crcMatches = buf.readUInt32LE(found + 4) === entry.crc;
      let length = 0;
      if (crcMatches && buf.readUInt32LE(found + 8) === entry.bytes && buf.readUInt32LE(found + 12) === entry.bytes)
        length = DESCRIPTOR_BYTES;
      else if (crcMatches) {
        // Perhaps a ZIP64 descriptor (8-byte sizes): it needs its last bytes.
        if (found + ZIP64_DESCRIPTOR_BYTES > buf.length) return found - at;
        if (Number(buf.readBigUInt64LE(found + 8)) === entry.bytes && Number(buf.readBigUInt64LE(found + 16)) === entry.bytes)
          length = ZIP64_DESCRIPTOR_BYTES;
      }
      if (length > 0) {
        if (entry.limit !== undefined) throw new UnsafeZipError(endsEarly(entry.name, entry.bytes, entry.limit));
        entry.compressedSeen = entry.bytes;
        await this.endStored(entry, entry.crc, length);
        return found + length - at;
      }
      // The signature's bytes were content: go on after them.
      this.content(entry, buf.subarray(found, found + 1));
      from = found + 1;
    }
  }

  /**
   * The data descriptor after an entry whose length the directory gave: it must be there, right after the data,
   * and say what the directory says (the data is then checked against it).
   */
  private async descriptor(buf: Buffer, at: number): Promise<number> {
    const entry = this.current!;
    const listed = this.directory!.entries[this.seen.length]!;
    if (buf.length - at < DESCRIPTOR_BYTES) return 0;
    if (buf.readUInt32LE(at) !== DESCRIPTOR_SIGNATURE) {
      throw new UnsafeZipError(
        `entry "${entry.name}" has no data descriptor after its data (at byte ${this.base + at}), though its flags say one follows`,
      );
    }
    const crc = buf.readUInt32LE(at + 4);
    let length = DESCRIPTOR_BYTES;
    let compressedSize = buf.readUInt32LE(at + 8);
    let uncompressedSize = buf.readUInt32LE(at + 12);
    if (
      (compressedSize !== listed.compressedSize || uncompressedSize !== listed.uncompressedSize) &&
      zip64Descriptor(listed, entry.header)
    ) {
      if (buf.length - at < ZIP64_DESCRIPTOR_BYTES) return 0;
      length = ZIP64_DESCRIPTOR_BYTES;
      compressedSize = u64(buf, at + 8);
      uncompressedSize = u64(buf, at + 16);
    }
    if (crc !== listed.crc || compressedSize !== listed.compressedSize || uncompressedSize !== listed.uncompressedSize) {
      throw new UnsafeZipError(
        `the data descriptor of entry "${entry.name}" disagrees with the central directory: CRC-32 ${hex(crc)}, ${compressedSize} bytes compressed, ${uncompressedSize} uncompressed; the directory says ${hex(listed.crc)}, ${listed.compressedSize}, ${listed.uncompressedSize}`,
      );
    }
    if (entry.method === 0) await this.endStored(entry, crc, length);
    else await this.endEntry(entry, crc, uncompressedSize, length);
    return length;
  }

  private async endStored(entry: Current, declaredCrc: number, descriptorBytes: number): Promise<void> {
    this.total += entry.bytes;
    if (this.total > this.limits.maxTotalUncompressed)
      throw new ZipOverLimit(`uncompressed size over ${this.limits.maxTotalUncompressed} bytes`);
    await this.endEntry(entry, declaredCrc, entry.bytes, descriptorBytes);
  }

  /** Feeds compressed bytes to the inflater, waiting when it is behind, so memory stays flat. */
  private async inflate(inflater: InflateRaw, piece: Buffer): Promise<void> {
    if (inflater.write(piece)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        inflater.off('drain', done);
        inflater.off('close', done);
        resolve();
      };
      inflater.once('drain', done);
      inflater.once('close', done);
    });
  }

  private deflateEndsEarly(entry: Current): UnsafeZipError {
    return new UnsafeZipError(
      `entry "${entry.name}"'s deflate stream ends after ${entry.inflater!.bytesWritten} of its ${entry.compressedSize} bytes: a sequential reader would look for what follows there`,
    );
  }

  /** All of an entry's data is in: the deflate stream must end exactly with it. */
  private async dataEnded(entry: Current): Promise<void> {
    if (!entry.inflater) return;
    entry.inflater.end();
    await entry.inflated;
    if (this.failure) throw this.failure;
    if (entry.inflater.bytesWritten !== entry.compressedSeen) throw this.deflateEndsEarly(entry);
  }

  private async endEntry(entry: Current, declaredCrc: number, declaredSize: number, descriptorBytes: number): Promise<void> {
    if (entry.bytes !== declaredSize)
      throw new UnsafeZipError(`entry "${entry.name}" holds ${entry.bytes} bytes, its header says ${declaredSize}`);
    if (entry.crc !== declaredCrc) throw damaged(`entry "${entry.name}" fails its CRC-32 check (corrupted in the ZIP)`);
    const wrong = contentProblem(entry.name, entry.head.toString('latin1'));
    if (wrong) throw new UnsafeZipError(wrong);
    const sha256 = entry.sink ? entry.sink.sha256() : entry.hash!.digest('hex');
    const verified = { name: entry.name, bytes: entry.bytes, sha256 };
    const seen: SeenEntry = { ...verified, header: entry.header, crc: entry.crc, compressedBytes: entry.compressedSeen, descriptorBytes };
    // Given the directory, the entry is judged against it at once, before the inspector sees it.
    const listed = this.directory?.entries[this.seen.length];
    const problem = listed && entryMismatch(listed, seen);
    if (problem) throw new UnsafeZipError(problem);
    if (entry.sink) {
      const sink = entry.sink;
      entry.sink = undefined;
      await sink.inspect(verified).catch((err: unknown) => {
        this.inspectionFailure ??= err as Error;
      });
    }
    this.seen.push(seen);
    this.current = undefined;
    this.state = 'header';
  }
}

/** The sizes in a local header's ZIP64 extra field (id 0x0001), if it has one. */
function zip64Sizes(extra: Buffer): { uncompressed: number; compressed: number } | undefined {
  const field = extraField(extra, ZIP64_EXTRA);
  if (!field || field.length < 16) return undefined;
  return { uncompressed: u64(field, 0), compressed: u64(field, 8) };
}
