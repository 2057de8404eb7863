import { createHash, type Hash } from 'node:crypto';
import { CARRY_BYTES, ReferenceScan, StructureScan, wholePdf, type Digester, type PdfBytes, type StructureMarks } from './pdf-bytes.js';

/** A file up to this size is held whole: its check reads it like any buffer. */
export const HOLD_WHOLE_BYTES = 32 * 2 ** 20;
/** Over it, the last bytes held: a seal's dictionary, everything appended after it, and the last cross-reference. */
export const TAIL_BYTES = 8 * 2 ** 20;
/** ... and the first: where a writer that saves whole (pdf-lib, most generators) puts the catalog. */
export const HEAD_BYTES = 2 ** 20;
/** More /ByteRange texts than a real file carries: past this many, spans are no longer followed. */
const MAX_SPANS = 64;
const BYTE_RANGE = Buffer.from('/ByteRange');
const RANGE_TEXT = /^\/ByteRange\s*\[\s*(\d{1,15})\s+(\d{1,15})\s+(\d{1,15})\s+(\d{1,15})\s*\]/;
/** Long enough for "/ByteRange [" and four 15-digit numbers with generous spacing. */
const RANGE_TEXT_BYTES = 160;

interface Span {
  b: number;
  c: number;
  end: number;
  /** The whole-file hash's state at b, fed again from c to `end`. */
  hash: Hash | undefined;
  digest: Buffer | undefined;
}

export interface StreamedPdfOptions {
  holdWhole?: number;
  tail?: number;
  head?: number;
}

/**
 * Reads a PDF once, as it streams past, and keeps what checking its seals
 * needs: the file's SHA-256, and the SHA-256 of every span a /ByteRange in it
 * names ([0, b) then [c, c + d)), computed in the same pass with no copy and
 * no second read. One hash runs over the file, a tail window behind the
 * bytes received; each /ByteRange is found when it arrives, which is before
 * the hash reaches its b unless the dictionary writes it more than the tail
 * window after its /Contents. At b the hash's state is copied; the copy skips
 * the signature value and takes [c, c + d) with the main hash. A file up to
 * `holdWhole` is also held whole; a larger one keeps only its head and tail,
 * so memory stays flat whatever its size.
 */
export class StreamedPdf {
  readonly #holdWhole: number;
  readonly #tailBytes: number;
  readonly #headBytes: number;
  readonly #hash = createHash('sha256');
  readonly #references = new ReferenceScan();
  /** Object headers and /ObjStm names, once the file is too large to hold (a file held whole is scanned at the end). */
  readonly #structure = new StructureScan();
  #marks: StructureMarks | undefined;
  /** While the file is held whole: every chunk, copied. */
  #kept: Buffer[] = [];
  /** The chunk of `#kept` the hash has reached, and where it starts in the file. */
  #cursor = 0;
  #cursorOffset = 0;
  /**
   * Once the file is too large to hold: its last bytes, byte i at i % length, written over in place, so the pass
   * allocates nothing per chunk. Bytes before `#ringEnd` are in it; the chunk being taken is `#incoming` until
   * the hash has passed what it overwrites.
   */
  #ring: Buffer | undefined;
  #ringEnd = 0;
  #incoming: Buffer | undefined;
  #head: Buffer | undefined;
  #received = 0;
  #hashedTo = 0;
  /** The last bytes of the previous chunk, for a /ByteRange split across two chunks. */
  #carry = Buffer.alloc(0);
  readonly #spans = new Map<string, Span>();
  /** Why a span has no digest: named after the hash passed its b, or one too many. */
  readonly #missed = new Map<string, string>();
  #tooMany = false;
  #digest: string | undefined;

  constructor(options: StreamedPdfOptions = {}) {
    this.#tailBytes = options.tail ?? TAIL_BYTES;
    this.#headBytes = options.head ?? HEAD_BYTES;
    // Everything is held until the head is whole: it is copied out of what is held when the file stops being held.
    this.#holdWhole = Math.max(options.holdWhole ?? HOLD_WHOLE_BYTES, this.#headBytes);
  }

  update(chunk: Buffer): void {
    if (this.#digest !== undefined) throw new Error('bytes after the end of the file');
    if (chunk.length === 0) return;
    this.#received += chunk.length;
    this.#scan(chunk);
    if (this.#ring) {
      // The hash first passes what the chunk will overwrite (the tail window lags the bytes received), then the
      // chunk is copied in: a stored entry's bytes are views into the HTTP client's chunks, not ours to keep.
      this.#incoming = chunk;
      this.#feed(this.#received - this.#tailBytes);
      this.#references.update(chunk, (start, end) => this.#fromRing(start, end));
      this.#structure.update(chunk);
      this.#store(chunk);
      return;
    }
    // Copied, for the same reason.
    this.#kept.push(Buffer.from(chunk));
    this.#feed(this.#received - this.#tailBytes);
    if (this.#received > this.#holdWhole) this.#stopHolding();
  }

  /** The file's SHA-256 (hex); ends the pass. */
  sha256(): string {
    if (this.#digest === undefined) {
      this.#scanCarry();
      this.#feed(this.#received);
      this.#digest = this.#hash.digest('hex');
      if (this.#ring) this.#marks = this.#structure.finish();
    }
    return this.#digest;
  }

  /** What the pass kept, for the seal checks. */
  bytes(): PdfBytes {
    this.sha256();
    const length = this.#received;
    const tailStart = this.#ring ? Math.max(0, length - this.#tailBytes) : 0;
    const tail = this.#ring
      ? this.#fromRing(tailStart, length).bytes
      : this.#kept.length === 1
        ? this.#kept[0]!
        : Buffer.concat(this.#kept);
    const span = (b: number, c: number, d: number): Digester => {
      const known = this.#spans.get(`${b} ${c} ${d}`)?.digest;
      return (algorithm) => {
        if (known && /^sha-?256$/i.test(algorithm)) return known;
        if (whole) return whole.span(b, c, d)(algorithm);
        if (!known) {
          const why =
            this.#missed.get(`${b} ${c} ${d}`) ?? (this.#tooMany ? `it names more than ${MAX_SPANS} /ByteRange spans` : undefined);
          throw new Error(why ?? `its /ByteRange [0 ${b} ${c} ${d}] was not found whole where the pass read it`);
        }
        throw new Error(`its digest algorithm is ${algorithm}: a file over ${size(this.#holdWhole)} is checked in one pass, with SHA-256`);
      };
    };
    const whole = this.#head === undefined ? wholePdf(tail) : undefined;
    const maxReferenceBefore = (limit: number) => this.#references.maxBefore(limit);
    if (whole) return { ...whole, span };
    const marks = this.#marks!;
    const head = this.#head!;
    const windows = [
      { buf: head, start: 0 },
      { buf: tail, start: tailStart },
    ];
    return {
      length,
      whole: undefined,
      slice: (start, end) => {
        const w = windows.find((x) => start >= x.start && end <= x.start + x.buf.length && start <= end);
        return w?.buf.subarray(start - w.start, end - w.start);
      },
      windowAt: (offset) => windows.find((x) => offset >= x.start && offset < x.start + x.buf.length),
      lastIndexOf: (text, before) => {
        for (const w of [...windows].reverse()) {
          const limit = before - w.start - 1;
          if (limit < 0) continue;
          const at = w.buf.lastIndexOf(text, Math.min(limit, w.buf.length - 1));
          if (at !== -1) return w.start + at;
        }
        return -1;
      },
      span,
      maxReferenceBefore,
      marks: () => marks,
      partial: tailStart > head.length,
      held: `the first ${size(head.length)} and the last ${size(tail.length)} of its ${size(length)}`,
    };
  }

  /**
   * Follows each /ByteRange whose text is complete. `#carry` holds the last bytes before `chunk` (fewer than the
   * text of one), where a /ByteRange not yet read whole may start; what is read here never stays in the carry.
   */
  #scan(chunk: Buffer): void {
    const carried = this.#carry.length;
    const edge = Buffer.concat([this.#carry, chunk.subarray(0, RANGE_TEXT_BYTES)]);
    for (let at = byteRangeAt(edge, 0); at !== -1 && at < carried; at = byteRangeAt(edge, at + 1)) {
      if (at + RANGE_TEXT_BYTES <= edge.length) this.#found(edge.subarray(at, at + RANGE_TEXT_BYTES));
    }
    for (let at = byteRangeAt(chunk, 0); at !== -1 && at + RANGE_TEXT_BYTES <= chunk.length; at = byteRangeAt(chunk, at + 1)) {
      this.#found(chunk.subarray(at, at + RANGE_TEXT_BYTES));
    }
    const keep = RANGE_TEXT_BYTES - 1;
    this.#carry = chunk.length >= keep ? Buffer.from(chunk.subarray(-keep)) : Buffer.concat([this.#carry, chunk]).subarray(-keep);
  }

  /** At the end of the file: a /ByteRange in its last bytes is read with what there is. */
  #scanCarry(): void {
    for (let at = byteRangeAt(this.#carry, 0); at !== -1; at = byteRangeAt(this.#carry, at + 1)) {
      this.#found(this.#carry.subarray(at));
    }
    this.#carry = Buffer.alloc(0);
  }

  #found(text: Buffer): void {
    const m = RANGE_TEXT.exec(text.toString('latin1'));
    if (!m) return;
    const [a, b, c, d] = m.slice(1, 5).map(Number) as [number, number, number, number];
    // A range a seal check would refuse anyway (it must start the file and frame a gap) needs no digest.
    if (a !== 0 || b <= 0 || c <= b) return;
    const key = `${b} ${c} ${d}`;
    if (this.#spans.has(key)) return;
    if (b < this.#hashedTo) {
      if (this.#missed.size < MAX_SPANS)
        this.#missed.set(
          key,
          `its /ByteRange [0 ${b} ${c} ${d}] is written more than ${size(this.#tailBytes)} after the signature value it frames`,
        );
      return;
    }
    if (this.#spans.size >= MAX_SPANS) {
      this.#tooMany = true;
      return;
    }
    const span: Span = { b, c, end: c + d, hash: undefined, digest: undefined };
    this.#spans.set(key, span);
    this.#fire(span, this.#hashedTo);
  }

  /** Feeds the hash (and every span between its c and end) up to `to`, stopping at each span's b, c and end. */
  #feed(to: number): void {
    while (this.#hashedTo < to) {
      let next = to;
      for (const s of this.#spans.values()) {
        for (const p of [s.b, s.c, s.end]) if (p > this.#hashedTo && p < next) next = p;
      }
      const from = this.#hashedTo;
      const feeding = [...this.#spans.values()].filter((s) => s.hash && !s.digest && from >= s.c && from < s.end);
      this.#pieces(from, next, (piece) => {
        this.#hash.update(piece);
        for (const s of feeding) s.hash!.update(piece);
      });
      this.#hashedTo = next;
      for (const s of this.#spans.values()) this.#fire(s, next);
    }
  }

  /** Hands over bytes [from, to) in order, as views of what is held (no copy). */
  #pieces(from: number, to: number, take: (piece: Buffer) => void): void {
    const ring = this.#ring;
    if (!ring) {
      // The chunk holding `from`: found from the cursor, which only moves forward (the chunks before it are hashed).
      while (this.#cursorOffset + this.#kept[this.#cursor]!.length <= from) this.#cursorOffset += this.#kept[this.#cursor++]!.length;
      for (let i = this.#cursor, offset = this.#cursorOffset; offset < to; offset += this.#kept[i++]!.length) {
        const chunk = this.#kept[i]!;
        take(chunk.subarray(Math.max(from, offset) - offset, Math.min(to, offset + chunk.length) - offset));
      }
      return;
    }
    const inRing = Math.min(to, this.#ringEnd);
    for (let at = from; at < inRing;) {
      const position = at % ring.length;
      const n = Math.min(inRing - at, ring.length - position);
      take(ring.subarray(position, position + n));
      at += n;
    }
    if (to > this.#ringEnd) take(this.#incoming!.subarray(Math.max(from, this.#ringEnd) - this.#ringEnd, to - this.#ringEnd));
  }

  /** The file is larger than what is held whole: keep its head, and its tail window in the ring from now on. */
  #stopHolding(): void {
    this.#head = this.#bytes(0, Math.min(this.#headBytes, this.#received));
    // A file held whole is scanned for its references and object headers when it is checked; one that is not is
    // scanned from here on, its bytes so far (all still held, and ours) first.
    const heldBefore = (start: number, end: number) => ({ start: Math.max(0, start), bytes: this.#bytes(Math.max(0, start), end) });
    for (const held of this.#kept) {
      this.#references.update(held, heldBefore);
      this.#structure.update(held);
    }
    // The ring holds the tail window, and before it what the reference scan may look back for; it takes every
    // held byte it can: what the hash has not reached, and the bytes before them.
    this.#ring = Buffer.allocUnsafe(this.#tailBytes + CARRY_BYTES);
    const from = this.#received - this.#ring.length;
    let offset = 0;
    for (const held of this.#kept) {
      if (offset + held.length > from) {
        this.#ringEnd = offset;
        this.#store(held);
      }
      offset += held.length;
    }
    this.#ringEnd = this.#received;
    this.#kept = [];
  }

  /** Copies `chunk` into the ring as the bytes from `#ringEnd` on (its last bytes only, when it is longer). */
  #store(chunk: Buffer): void {
    const ring = this.#ring!;
    const end = this.#ringEnd + chunk.length;
    let source = chunk.length > ring.length ? chunk.subarray(chunk.length - ring.length) : chunk;
    for (let at = end - source.length; source.length > 0;) {
      const position = at % ring.length;
      const n = Math.min(source.length, ring.length - position);
      source.copy(ring, position, 0, n);
      source = source.subarray(n);
      at += n;
    }
    this.#ringEnd = end;
    this.#incoming = undefined;
  }

  /** A copy of bytes [start, end) still in the ring, from `start` or the oldest it holds, and where it starts. */
  #fromRing(start: number, end: number): { start: number; bytes: Buffer } {
    const ring = this.#ring!;
    const from = Math.max(start, this.#ringEnd - ring.length, 0);
    const out = Buffer.allocUnsafe(Math.max(0, end - from));
    let written = 0;
    this.#pieces(from, end, (piece) => (written += piece.copy(out, written)));
    return { start: from, bytes: out };
  }

  /** What happens to a span when the hash stands at `at`. */
  #fire(span: Span, at: number): void {
    if (at === span.b && !span.hash) span.hash = this.#hash.copy();
    if (at === span.end && span.hash && !span.digest) span.digest = span.hash.digest();
  }

  /** Bytes [start, end) of what is held whole, copied. */
  #bytes(start: number, end: number): Buffer {
    const out = Buffer.alloc(end - start);
    let offset = 0;
    for (const chunk of this.#kept) {
      const lo = Math.max(start, offset);
      const hi = Math.min(end, offset + chunk.length);
      if (lo < hi) chunk.copy(out, lo - start, lo - offset, hi - offset);
      offset += chunk.length;
    }
    return out;
  }
}

/**
 * Where the next whole "/ByteRange" starts in `buf` from `from`, or -1: as `buf.indexOf(BYTE_RANGE, from)`, found by
 * its first two bytes and then compared. Node searches a ten-byte pattern with tables it builds at each call: about
 * 0.6 s per GiB of a large document, against 0.15 s for a two-byte one (`npm run bench -- archive` measures the pass).
 */
function byteRangeAt(buf: Buffer, from: number): number {
  for (let at = buf.indexOf(BYTE_RANGE_START, from); at !== -1; at = buf.indexOf(BYTE_RANGE_START, at + 1)) {
    if (at + BYTE_RANGE.length > buf.length) return -1;
    if (buf.compare(BYTE_RANGE, 0, BYTE_RANGE.length, at, at + BYTE_RANGE.length) === 0) return at;
  }
  return -1;
}
const BYTE_RANGE_START = BYTE_RANGE.subarray(0, 2);

const size = (bytes: number) => (bytes >= 2 ** 20 ? `${Math.round((bytes / 2 ** 20) * 10) / 10} MiB` : `${Math.ceil(bytes / 1024)} KiB`);
