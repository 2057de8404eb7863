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
  return {
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
