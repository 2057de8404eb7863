import { createHash, type Hash } from 'node:crypto';
import { createInflateRaw, crc32, type InflateRaw } from 'node:zlib';
import {
  contentProblem,
  directory,
  nameProblem,
  openZip,
  UnsafeZipError,
  type EntryInspector,
  type EntrySink,
  type VerifiedEntry,
  type ZipLimits,
} from './zip-verify.js';

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_DIRECTORY = 0x06054b50;
const ZIP64_END_OF_DIRECTORY = 0x06064b50;
const DESCRIPTOR = Buffer.from([0x50, 0x4b, 0x07, 0x08]);
const LOCAL_HEADER_BYTES = 30;
/** A data descriptor with its signature: 16 bytes, or 24 with ZIP64 sizes. */
const MAX_DESCRIPTOR_BYTES = 24;
const FLAG_ENCRYPTED = 0x1;
const FLAG_DESCRIPTOR = 0x8;

/** What the stream showed of one entry, to be matched with the central directory at the end. */
interface SeenEntry extends VerifiedEntry {
  offset: number;
  method: number;
  crc: number;
  compressedBytes: number;
}

/** The entry being read. */
interface Current {
  name: string;
  offset: number;
  method: number;
  /** Known from the local header, or undefined when a data descriptor follows the data. */
  compressedSize: number | undefined;
  declaredCrc: number;
  declaredSize: number;
  compressedSeen: number;
  bytes: number;
  crc: number;
  /** Hashes the entry, unless a sink does. */
  hash: Hash | undefined;
  head: Buffer;
  sink: EntrySink | undefined;
  inflater: InflateRaw | undefined;
  inflated: Promise<void> | undefined;
}

export type StreamVerdict = { entries: VerifiedEntry[] } | { fallback: string };

/**
 * Verifies a ZIP while it downloads, in the same pass that writes it to disk:
 * each entry's CRC-32, SHA-256, size and first bytes from its local header
 * and data, and its content shown to `inspect` (the seals, the audit trail)
 * as soon as the entry ends. At the end, `finish` reads the central directory
 * from the written file, judges it as `verifyZip` does, and checks it lists
 * exactly the entries the stream showed (names, order, offsets, sizes,
 * CRC-32): an entry hidden from one view or the other is refused.
 *
 * Stored entries (with sizes in the header or a data descriptor after the
 * data) and deflated entries with known sizes are verified on the fly. For
 * a layout it cannot follow (a deflated entry with a data descriptor, bytes
 * before the first header) it stops looking and `finish` says to fall back
 * to `verifyZip` on the file, which reads it a second time.
 */
export class StreamingZipVerifier {
  private carry: Buffer = Buffer.alloc(0);
  /** Bytes of the ZIP received before the current chunk. */
  private received = 0;
  /** Offset in the ZIP of the first byte of the buffer being read (the carry, then the chunk). */
  private base = 0;
  private state: 'header' | 'data' | 'rest' | 'fallback' | 'failed' = 'header';
  private current: Current | undefined;
  private readonly seen: SeenEntry[] = [];
  private readonly names = new Set<string>();
  private total = 0;
  private failure: Error | undefined;
  /** The first problem the inspector found (a seal, the audit trail): named once the ZIP itself is judged sound. */
  private inspectionFailure: Error | undefined;
  private fallbackReason = '';

  constructor(
    private readonly limits: ZipLimits,
    private readonly inspector?: EntryInspector,
  ) {}

  /** Takes the next chunk of the download. Never throws: a problem is kept for `finish`, and the rest is ignored. */
  async update(chunk: Buffer): Promise<void> {
    if (this.state === 'rest' || this.state === 'fallback' || this.state === 'failed') return;
    try {
      await this.take(chunk);
    } catch (err) {
      this.fail(err as Error);
    }
  }

  /**
   * After the whole ZIP is on disk at `path`: the verified entries, or why the file must be verified on its
   * own. As in `verifyZip`, the central directory's verdict comes first: a structural problem is named before
   * what the stream found in an entry, and what the inspector found is named only for a sound ZIP.
   */
  async finish(path: string): Promise<StreamVerdict> {
    if (!this.failure && this.state !== 'rest') {
      if (this.state === 'fallback') return { fallback: this.fallbackReason };
      return { fallback: this.state === 'data' ? 'the download ended inside an entry' : 'the download ended before the central directory' };
    }
    const zip = await openZip(path);
    let listed;
    try {
      listed = await directory(zip, this.limits);
    } finally {
      zip.close();
    }
    if (this.failure) throw this.failure;
    if (listed.length !== this.seen.length) {
      throw new UnsafeZipError(`the central directory lists ${listed.length} entries, the file holds ${this.seen.length}`);
    }
    listed.forEach((entry, i) => {
      const seen = this.seen[i]!;
      const differs =
        entry.fileName !== seen.name ||
        entry.relativeOffsetOfLocalHeader !== seen.offset ||
        entry.compressionMethod !== seen.method ||
        entry.crc32 !== seen.crc ||
        entry.uncompressedSize !== seen.bytes ||
        entry.compressedSize !== seen.compressedBytes;
      if (differs) throw new UnsafeZipError(`entry "${entry.fileName}" in the central directory does not match the entry in the file`);
    });
    if (this.inspectionFailure) throw this.inspectionFailure;
    return { entries: this.seen.map(({ name, bytes, sha256 }) => ({ name, bytes, sha256 })) };
  }

  private fail(err: Error): void {
    this.failure = err instanceof UnsafeZipError ? err : new UnsafeZipError(err.message);
    this.state = 'failed';
    this.current?.inflater?.destroy();
  }

  private fallback(reason: string): void {
    this.fallbackReason = reason;
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
      if (this.state === 'header') {
        const used = this.header(buf, at);
        if (used === 0) break; // needs more bytes
        at += used;
      } else if (this.state === 'data') {
        const used = await this.data(buf, at);
        if (used === 0) break;
        at += used;
      } else return;
    }
    // What is left is a partial header or descriptor: a few bytes, copied so the chunk can be freed.
    if (this.state === 'header' || this.state === 'data') this.carry = Buffer.from(buf.subarray(at));
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

  /** Reads a local header at `at`; returns the bytes used, or 0 if more are needed. */
  private header(buf: Buffer, at: number): number {
    if (buf.length - at < 4) return 0;
    const signature = buf.readUInt32LE(at);
    if (signature === CENTRAL_HEADER || signature === END_OF_DIRECTORY || signature === ZIP64_END_OF_DIRECTORY) {
      this.state = 'rest';
      return buf.length - at;
    }
    if (signature !== LOCAL_HEADER) {
      this.fallback(this.seen.length === 0 ? 'the file does not start with a local header' : 'unexpected bytes between entries');
      return buf.length - at;
    }
    if (buf.length - at < LOCAL_HEADER_BYTES) return 0;
    const flags = buf.readUInt16LE(at + 6);
    const method = buf.readUInt16LE(at + 8);
    const nameLength = buf.readUInt16LE(at + 26);
    const extraLength = buf.readUInt16LE(at + 28);
    const length = LOCAL_HEADER_BYTES + nameLength + extraLength;
    if (buf.length - at < length) return 0;
    const name = buf.toString('utf8', at + LOCAL_HEADER_BYTES, at + LOCAL_HEADER_BYTES + nameLength);
    const offset = this.base + at;

    if (this.seen.length + 1 > this.limits.maxEntries) throw new UnsafeZipError(`more than ${this.limits.maxEntries} entries`);
    const unsafe = nameProblem(name, this.names);
    if (unsafe) throw new UnsafeZipError(unsafe);
    if (flags & FLAG_ENCRYPTED) throw new UnsafeZipError(`entry "${name}" is encrypted`);
    if (method !== 0 && method !== 8) throw new UnsafeZipError(`entry "${name}" uses compression method ${method}`);
    const descriptor = (flags & FLAG_DESCRIPTOR) !== 0;
    let compressedSize = descriptor ? undefined : buf.readUInt32LE(at + 18);
    let declaredSize = buf.readUInt32LE(at + 22);
    if (compressedSize === 0xffffffff || declaredSize === 0xffffffff) {
      const zip64 = zip64Sizes(buf.subarray(at + LOCAL_HEADER_BYTES + nameLength, at + length));
      if (!zip64) throw new UnsafeZipError(`entry "${name}" has ZIP64 sizes without a ZIP64 field`);
      if (compressedSize !== undefined) compressedSize = zip64.compressed;
      declaredSize = zip64.uncompressed;
    }
    if (method === 8 && descriptor) {
      this.fallback(`entry "${name}" is deflated with its sizes after the data`);
      return buf.length - at;
    }
    if (compressedSize !== undefined) {
      this.total += method === 0 ? compressedSize : declaredSize;
      if (this.total > this.limits.maxTotalUncompressed)
        throw new UnsafeZipError(`uncompressed size over ${this.limits.maxTotalUncompressed} bytes`);
      if (method === 8 && compressedSize > 0 && declaredSize / compressedSize > this.limits.maxRatio) {
        throw new UnsafeZipError(`entry "${name}" expands ${Math.round(declaredSize / compressedSize)}x (compression bomb?)`);
      }
    }
    const sink = this.inspector?.open(name);
    if (sink?.maxBytes !== undefined && compressedSize !== undefined && declaredSize > sink.maxBytes)
      throw new UnsafeZipError(`entry "${name}" is too large to verify`);
    const current: Current = {
      name,
      offset,
      method,
      compressedSize,
      declaredCrc: buf.readUInt32LE(at + 14),
      declaredSize,
      compressedSeen: 0,
      bytes: 0,
      crc: 0,
      hash: sink ? undefined : createHash('sha256'),
      head: Buffer.alloc(0),
      sink,
      inflater: undefined,
      inflated: undefined,
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
        inflater.once('end', resolve);
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
    if (entry.method === 8 && entry.bytes > entry.declaredSize) {
      throw new UnsafeZipError(`entry "${entry.name}" inflates past the ${entry.declaredSize} bytes its header says`);
    }
  }

  /** Reads entry data from `buf[at]`; returns the bytes used, or 0 if more are needed. */
  private async data(buf: Buffer, at: number): Promise<number> {
    const entry = this.current!;
    if (entry.compressedSize !== undefined) {
      const n = Math.min(entry.compressedSize - entry.compressedSeen, buf.length - at);
      const piece = buf.subarray(at, at + n);
      entry.compressedSeen += n;
      if (entry.inflater) await this.inflate(entry.inflater, piece);
      else this.content(entry, piece);
      if (entry.compressedSeen === entry.compressedSize) await this.endEntry(entry, entry.declaredCrc, entry.declaredSize);
      return n;
    }
    // A stored entry whose sizes follow it: it ends at a data descriptor whose CRC-32 and sizes match the bytes before it.
    let from = at;
    for (;;) {
      const found = buf.indexOf(DESCRIPTOR, from);
      if (found < 0) {
        // The last bytes may be the start of a signature: they wait for the next chunk.
        const safe = Math.max(from, buf.length - (DESCRIPTOR.length - 1));
        this.content(entry, buf.subarray(from, safe));
        return safe - at;
      }
      this.content(entry, buf.subarray(from, found));
      if (found + 16 > buf.length) return found - at;
      const crcMatches = buf.readUInt32LE(found + 4) === entry.crc;
      if (crcMatches && buf.readUInt32LE(found + 8) === entry.bytes && buf.readUInt32LE(found + 12) === entry.bytes) {
        return this.endStored(entry, found + 16 - at);
      }
      if (crcMatches) {
        // Perhaps a ZIP64 descriptor (8-byte sizes): it needs its last bytes.
        if (found + MAX_DESCRIPTOR_BYTES > buf.length) return found - at;
        if (Number(buf.readBigUInt64LE(found + 8)) === entry.bytes && Number(buf.readBigUInt64LE(found + 16)) === entry.bytes) {
          return this.endStored(entry, found + MAX_DESCRIPTOR_BYTES - at);
        }
      }
      // The signature's bytes were content: go on after them.
      this.content(entry, buf.subarray(found, found + 1));
      from = found + 1;
    }
  }

  private async endStored(entry: Current, used: number): Promise<number> {
    entry.compressedSeen = entry.bytes;
    this.total += entry.bytes;
    if (this.total > this.limits.maxTotalUncompressed)
      throw new UnsafeZipError(`uncompressed size over ${this.limits.maxTotalUncompressed} bytes`);
    await this.endEntry(entry, entry.crc, entry.bytes);
    return used;
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

  private async endEntry(entry: Current, declaredCrc: number, declaredSize: number): Promise<void> {
    if (entry.inflater) {
      entry.inflater.end();
      await entry.inflated;
      if (this.failure) throw this.failure;
    }
    if (entry.bytes !== declaredSize)
      throw new UnsafeZipError(`entry "${entry.name}" holds ${entry.bytes} bytes, its header says ${declaredSize}`);
    if (entry.crc !== declaredCrc) throw new UnsafeZipError(`entry "${entry.name}" fails its CRC-32 check (corrupted in the ZIP)`);
    const wrong = contentProblem(entry.name, entry.head.toString('latin1'));
    if (wrong) throw new UnsafeZipError(wrong);
    const sha256 = entry.sink ? entry.sink.sha256() : entry.hash!.digest('hex');
    const verified = { name: entry.name, bytes: entry.bytes, sha256 };
    if (entry.sink) {
      const sink = entry.sink;
      entry.sink = undefined;
      await sink.inspect(verified).catch((err: unknown) => {
        this.inspectionFailure ??= err as Error;
      });
    }
    this.seen.push({ ...verified, offset: entry.offset, method: entry.method, crc: entry.crc, compressedBytes: entry.compressedSeen });
    this.current = undefined;
    this.state = 'header';
  }
}

/** The sizes in a local header's ZIP64 extra field (id 0x0001), if it has one. */
function zip64Sizes(extra: Buffer): { uncompressed: number; compressed: number } | undefined {
  for (let i = 0; i + 4 <= extra.length;) {
    const id = extra.readUInt16LE(i);
    const size = extra.readUInt16LE(i + 2);
    if (id === 0x0001 && size >= 16 && i + 4 + 16 <= extra.length) {
      return { uncompressed: Number(extra.readBigUInt64LE(i + 4)), compressed: Number(extra.readBigUInt64LE(i + 12)) };
    }
    i += 4 + size;
  }
  return undefined;
}
