import { createHash } from 'node:crypto';

/**
 * The digest of the bytes a signature covers, by the digest algorithm its
 * CMS names (pkijs's names: "SHA-256", ...). Throws with the reason when that
 * digest cannot be had (a large file checked as it streamed past knows only
 * the SHA-256 of the spans it saw named).
 */
export type Digester = (algorithm: string) => Buffer;

/**
 * A PDF as a seal check sees it: the whole file in memory, or what a single
 * pass over a large one kept (its first and last bytes, and the SHA-256 of
 * every span a /ByteRange named). Reads outside what is held say so, and the
 * check refuses what it cannot read: never "not checked".
 */
export interface PdfBytes {
  readonly length: number;
  /** The whole file, when it is held. */
  readonly whole: Buffer | undefined;
  /** Bytes [start, end), or undefined when they are not all held. */
  slice(start: number, end: number): Buffer | undefined;
  /** The held window containing `offset`, and where that window starts in the file. */
  windowAt(offset: number): { buf: Buffer; start: number } | undefined;
  /** The last occurrence of `text` that starts before `before`, in the held bytes; -1 when none. */
  lastIndexOf(text: string, before: number): number;
  /** The digest of [0, b) followed by [c, c + d). */
  span(b: number, c: number, d: number): Digester;
  /** The highest object number referenced ("n g R") before byte `limit`; -1 when none. */
  maxReferenceBefore(limit: number): number;
  /** Every object header and /ObjStm name in the file, as a reader rebuilding its cross-reference would find them. */
  marks(): StructureMarks;
  /** Whether bytes of the file are not held (a large file checked as it streamed past). */
  readonly partial: boolean;
  /** What is held, for the reason a read failed. */
  readonly held: string;
}

/** pkijs's digest names to Node's. */
export function nodeDigest(algorithm: string): string {
  const name = algorithm.toUpperCase().replace(/^SHA-?/, 'sha');
  if (!/^sha(1|256|384|512)$/.test(name)) throw new Error(`the digest algorithm ${algorithm} is not supported`);
  return name;
}

/** A PDF held whole: every span's digest is computed over views of it, with no copy. */
export function wholePdf(pdf: Buffer): PdfBytes {
  let references: ReferenceScan | undefined;
  let marks: StructureMarks | undefined;
  return {
    marks: () => {
      if (!marks) {
        const scan = new StructureScan();
        scan.update(pdf);
        marks = scan.finish();
      }
      return marks;
    },
    maxReferenceBefore: (limit) => {
      if (!references) {
        references = new ReferenceScan();
        references.update(pdf);
      }
      return references.maxBefore(limit);
    },
    length: pdf.length,
    whole: pdf,
    slice: (start, end) => (start >= 0 && end <= pdf.length && start <= end ? pdf.subarray(start, end) : undefined),
    windowAt: (offset) => (offset >= 0 && offset < pdf.length ? { buf: pdf, start: 0 } : undefined),
    lastIndexOf: (text, before) => (before <= 0 ? -1 : pdf.lastIndexOf(text, before - 1)),
    span: (b, c, d) => (algorithm) =>
      createHash(nodeDigest(algorithm))
        .update(pdf.subarray(0, b))
        .update(pdf.subarray(c, c + d))
        .digest(),
    partial: false,
    held: 'the whole file',
  };
}

const R = 0x52;
const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
const isEol = (b: number | undefined) => b === 0x0a || b === 0x0d;
const isDelimiter = (b: number) =>
  b === 0x28 || b === 0x29 || b === 0x3c || b === 0x3e || b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d || b === 0x2f || b === 0x25;
/** A reference whose parts lie further back than the carry: its number cannot be known, so none is safe. */
export const UNREADABLE_REFERENCE = Number.MAX_SAFE_INTEGER;
/** How far back a reference's parts are looked for across chunks. */
export const CARRY_BYTES = 128 * 1024;

/** The bytes of [start, end) the caller still holds (from `start` or later), and where they start. */
export type ScanHistory = (start: number, end: number) => { start: number; bytes: Buffer };

/** For a scan of the whole file at once: nothing comes before it. */
const NOTHING_BEFORE: ScanHistory = (_start, end) => ({ start: end, bytes: Buffer.alloc(0) });

/**
 * Every indirect reference ("n g R") in a file, read as it streams past: the running maximum of the object numbers
 * referenced, with where it rose, so the highest one before any byte can be asked. It reads as PDF readers do:
 * comments are white space, "R" may follow the generation directly, a number may carry leading zeros. What only
 * looks like a reference (inside a binary stream) counts too, and a reference whose parts lie further back than
 * it looks counts as UNREADABLE_REFERENCE: both can only make the checks stricter.
 */
export class ReferenceScan {
  #max = -1;
  /** Pairs (offset, maximum from there on), offsets rising. */
  readonly #points: number[] = [];
  #offset = 0;

  /** The next bytes of the file; `history` gives the bytes before them, for a reference split across two. */
  update(chunk: Buffer, history: ScanHistory = NOTHING_BEFORE): void {
    for (let at = chunk.indexOf(R); at !== -1; at = chunk.indexOf(R, at + 1)) {
      const after = chunk[at + 1];
      if (after !== undefined && !isSpace(after) && !isDelimiter(after)) continue; // "Rect", "Root": not a reference
      let found = readReference(chunk, at);
      let base = this.#offset;
      if (found === 'short') {
        // Rare: the reference may begin in the bytes before; they are joined only for it.
        const before = history(this.#offset - CARRY_BYTES, this.#offset);
        if (before.bytes.length > 0) {
          base = before.start;
          found = readReference(Buffer.concat([before.bytes, chunk.subarray(0, at + 1)]), before.bytes.length + at);
        }
      }
      if (found === 'short') {
        // Back to the start of the file is the start of the reference's text; anything else is cut off.
        if (base > 0) this.#rise(this.#offset + at, UNREADABLE_REFERENCE);
      } else if (found !== 'none') this.#rise(base + found.start, found.num);
    }
    this.#offset += chunk.length;
  }

  maxBefore(limit: number): number {
    let best = -1;
    for (let i = 0; i < this.#points.length && this.#points[i]! < limit; i += 2) best = this.#points[i + 1]!;
    return best;
  }

  #rise(offset: number, num: number): void {
    if (num <= this.#max) return;
    this.#max = num;
    this.#points.push(offset, num);
  }
}

/**
 * The reference ("n g R") whose R is at `at` in `text`: its object number and where its text starts; 'none' when
 * the bytes before are no reference, 'short' when `text` starts before it could be told.
 */
function readReference(text: Buffer, at: number): { num: number; start: number } | 'none' | 'short' {
  let i = back(text, at - 1);
  if (i < 0) return 'short';
  if (!isDigit(text[i])) return 'none';
  while (isDigit(text[i])) i--;
  const afterGen = i;
  i = back(text, i);
  if (i < 0) return 'short';
  if (i === afterGen || !isDigit(text[i])) return 'none';
  const end = i + 1;
  while (isDigit(text[i])) i--;
  if (i < 0) return 'short';
  if (!isSpace(text[i]) && !isDelimiter(text[i]!)) return 'none';
  const digits = text.toString('latin1', i + 1, end).replace(/^0+(?=\d)/, '');
  return { num: digits.length > 10 ? UNREADABLE_REFERENCE : Number(digits), start: i + 1 };
}

/**
 * From `i` back over white space and comments (a comment runs from "%" to the end of its line): the index of the
 * first byte that is neither, or -1 when the text runs out first.
 */
function back(text: Buffer, i: number): number {
  while (i >= 0) {
    if (isEol(text[i])) {
      // The line before this end of line: a "%" in it starts a comment that ends here.
      let start = i - 1;
      while (start >= 0 && !isEol(text[start])) start--;
      const percent = text.subarray(start + 1, i).indexOf(0x25);
      if (percent !== -1) {
        i = start + percent;
        continue;
      }
    }
    if (!isSpace(text[i])) return i;
    i--;
  }
  return -1;
}

/**
 * Where a file's object headers ("n g obj") and the names that read /ObjStm stand, in file order: what a reader that
 * rebuilds a damaged cross-reference finds by scanning, and what pdf-lib's parser takes as definitions, the last
 * one of a number winning. The checks hold these to the cross-reference sections: a header no section lists, and
 * that is not in a listed stream's data, is an object outside any cross-reference.
 */
export interface StructureMarks {
  /** How many headers were found (the arrays may be longer). */
  readonly count: number;
  /** Where each header starts (its number's first digit). */
  readonly offsets: Float64Array;
  /** Its object number and generation; -1 for a header too long to read (its parts more than 64 bytes apart). */
  readonly nums: Int32Array;
  readonly gens: Int32Array;
  /** Where each name that reads /ObjStm (however its characters are escaped) starts. */
  readonly objStms: readonly number[];
  /** More headers than MAX_HEADERS were found: the marks are not all there, and the file is refused. */
  readonly overflow: boolean;
}

/** The most headers kept: 16 bytes each. Past it the file is refused (see StructureMarks.overflow). */
export const MAX_HEADERS = 2 ** 20;
/** How far back from "obj" a header's parts are read; a longer one is kept as unreadable. */
const HEADER_BYTES = 64;
/** How many bytes after a mark's start decide it ("obj" and what follows; a name up to /ObjStm's length and more). */
const LOOKAHEAD = 40;
const OBJ = Buffer.from('obj');
const NAME_STARTS = [Buffer.from('/O'), Buffer.from('/#')];
/** The bytes kept from one chunk to the next: a mark's back-read and look-ahead across the boundary. */
const EDGE = 128;

/**
 * The scan behind StructureMarks, run over the file in chunks of any size (the whole file at once when it is held):
 * the same marks whatever the chunking. Each candidate is decided once the bytes around it have arrived.
 */
export class StructureScan {
  #offset = 0;
  /** The last EDGE bytes before the next chunk. */
  #carry = Buffer.alloc(0);
  /** Candidates starting before this are decided. */
  #doneTo = 0;
  #count = 0;
  #offsets = new Float64Array(1024);
  #nums = new Int32Array(1024);
  #gens = new Int32Array(1024);
  readonly #objStms: number[] = [];
  #overflow = false;

  update(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const start = this.#offset;
    const end = start + chunk.length;
    const decideTo = end - LOOKAHEAD;
    // Near the chunk's start, a mark's back-read reaches into the bytes before it: those are read from a small joined copy.
    const edgeTo = Math.min(decideTo, start + EDGE);
    if (this.#doneTo < edgeTo) {
      const edge = Buffer.concat([this.#carry, chunk.subarray(0, EDGE + LOOKAHEAD)]);
      this.#decide(edge, start - this.#carry.length, this.#doneTo, edgeTo, false);
    }
    const from = Math.max(this.#doneTo, start + EDGE);
    if (from < decideTo) this.#decide(chunk, start, from, decideTo, false);
    this.#doneTo = Math.max(this.#doneTo, decideTo);
    this.#carry =
      chunk.length >= EDGE ? Buffer.from(chunk.subarray(chunk.length - EDGE)) : Buffer.concat([this.#carry, chunk]).subarray(-EDGE);
    this.#offset = end;
  }

  /** The end of the file: the last candidates are decided, and the marks returned. */
  finish(): StructureMarks {
    if (this.#doneTo < this.#offset) {
      this.#decide(this.#carry, this.#offset - this.#carry.length, this.#doneTo, this.#offset, true);
      this.#doneTo = this.#offset;
    }
    return {
      count: this.#count,
      offsets: this.#offsets,
      nums: this.#nums,
      gens: this.#gens,
      objStms: this.#objStms,
      overflow: this.#overflow,
    };
  }

  /** Decides the candidates starting in [from, to) of the file, read from `buf`, which holds the file from `bufStart`. */
  #decide(buf: Buffer, bufStart: number, from: number, to: number, atEnd: boolean): void {
    const lo = Math.max(0, from - bufStart);
    const hi = to - bufStart;
    for (let i = buf.indexOf(OBJ, lo); i !== -1 && i < hi; i = buf.indexOf(OBJ, i + 3)) this.#header(buf, bufStart, i, atEnd);
    // A name that reads /ObjStm starts "/O", or "/#" when its first character is escaped.
    const names: number[] = [];
    for (const start of NAME_STARTS) for (let i = buf.indexOf(start, lo); i !== -1 && i < hi; i = buf.indexOf(start, i + 1)) names.push(i);
    for (const i of names.sort((a, b) => a - b)) this.#name(buf, bufStart, i, atEnd);
  }

  /** "obj" at `i`: the header it ends, read back over white space, digits, white space, digits. */
  #header(buf: Buffer, bufStart: number, i: number, atEnd: boolean): void {
    const after = buf[i + 3];
    if (after === undefined ? !atEnd : !isSpace(after) && !isDelimiter(after)) return; // "objective", or (impossible) not yet known
    const floor = Math.max(i - HEADER_BYTES, 0);
    let j = i - 1;
    // White space, then the generation's digits, white space, the number's digits: each at least one byte.
    while (j >= floor && isSpace(buf[j])) j--;
    if (j === i - 1) return;
    if (j < floor) return this.#long(bufStart + floor, j >= 0 && (isSpace(buf[j]) || isDigit(buf[j])));
    const genEnd = j;
    let gen = 0;
    for (let scale = 1; j >= floor && isDigit(buf[j]); j--, scale *= 10) gen += (buf[j]! - 0x30) * scale;
    if (j === genEnd) return;
    if (j < floor) return this.#long(bufStart + floor, j >= 0 && (isDigit(buf[j]) || isSpace(buf[j])));
    const spaceEnd = j;
    while (j >= floor && isSpace(buf[j])) j--;
    if (j === spaceEnd) return;
    if (j < floor) return this.#long(bufStart + floor, j >= 0 && (isSpace(buf[j]) || isDigit(buf[j])));
    const numEnd = j;
    let num = 0;
    for (let scale = 1; j >= floor && isDigit(buf[j]); j--, scale *= 10) num += (buf[j]! - 0x30) * scale;
    if (j === numEnd) return;
    if (j < floor && j >= 0 && isDigit(buf[j])) return this.#long(bufStart + floor, true);
    // Leading zeros are zeros: a number of more than 9 significant digits, or a generation past 65535, is unreadable.
    const readable = num < 1e9 && gen <= 65535;
    this.#push(bufStart + j + 1, readable ? num : -1, readable ? gen : -1);
  }

  /** A header whose parts run further back than HEADER_BYTES: kept, unreadable, so that it is never taken as listed. */
  #long(at: number, long: boolean): void {
    if (long) this.#push(at, -1, -1);
  }

  #push(offset: number, num: number, gen: number): void {
    if (this.#count >= MAX_HEADERS) {
      this.#overflow = true;
      return;
    }
    if (this.#count === this.#offsets.length) {
      const grow = <T extends Float64Array | Int32Array>(a: T, make: (n: number) => T): T => {
        const b = make(a.length * 2);
        b.set(a);
        return b;
      };
      this.#offsets = grow(this.#offsets, (n) => new Float64Array(n));
      this.#nums = grow(this.#nums, (n) => new Int32Array(n));
      this.#gens = grow(this.#gens, (n) => new Int32Array(n));
    }
    this.#offsets[this.#count] = offset;
    this.#nums[this.#count] = num;
    this.#gens[this.#count] = gen;
    this.#count++;
  }

  /** A name at `i`: kept when it reads /ObjStm, #xx escapes decoded as a reader decodes them. */
  #name(buf: Buffer, bufStart: number, i: number, atEnd: boolean): void {
    let text = '/';
    let k = i + 1;
    for (; k < buf.length && text.length <= 8;) {
      const b = buf[k]!;
      if (isSpace(b) || isDelimiter(b)) break;
      if (b === 0x23) {
        const hex = buf.toString('latin1', k + 1, k + 3);
        if (!/^[0-9a-fA-F]{2}$/.test(hex)) return;
        text += String.fromCharCode(parseInt(hex, 16));
        k += 3;
      } else {
        text += String.fromCharCode(b);
        k++;
      }
    }
    if (text !== '/ObjStm') return;
    if (k >= buf.length ? atEnd : isSpace(buf[k]) || isDelimiter(buf[k]!)) {
      if (this.#objStms.length < MAX_HEADERS) this.#objStms.push(bufStart + i);
      else this.#overflow = true;
    }
  }
}
