/**
 * PDF syntax read strictly (PDF 32000 7.2 to 7.5): values, cross-reference tables and streams, and the incremental
 * updates appended to a sealed PDF. A PAdES seal stays valid when later revisions add only validation data (a
 * /DSS) and document time-stamps (ETSI EN 319 142-1, B-LT and B-LTA); anything else appended after a seal (a
 * changed page, a new annotation that shows) is a change to what was signed. The reader is conservative: a
 * construct it does not expect (an object stream in an update, an indirect /Length there, a duplicate key) is
 * reported, never passed.
 *
 * Values are kept as parsed, the way a reader uses them: names with their #xx escapes decoded, strings as their
 * bytes (escapes, octal codes and end-of-line rules of 7.3.4 applied), references by number and generation. Two
 * values are the same only when `sameValue` says so: text that differs only in white space inside a string is
 * another string.
 */
import { inflateSync } from 'node:zlib';

/** A PDF value as parsed; `start` and `end` are the bytes of the file it was read from. */
export type PdfValue = (
  | { kind: 'dict'; entries: Map<string, PdfValue> }
  | { kind: 'array'; items: PdfValue[] }
  | { kind: 'ref'; num: number; gen: number }
  /** `text`: the name decoded, with its slash ("/Type"). */
  | { kind: 'name'; text: string }
  | { kind: 'string'; bytes: Buffer; hex: boolean }
  | { kind: 'number'; text: string }
  | { kind: 'keyword'; text: 'true' | 'false' | 'null' }
) & { start: number; end: number };

export type PdfDict = Extract<PdfValue, { kind: 'dict' }>;

/** One object defined in an increment. */
export interface IncrementObject {
  num: number;
  gen: number;
  value: PdfValue;
  /** Where its header ("n g obj") starts in the file. */
  offset: number;
  /** A stream's bytes (still encoded), when the object is a stream. */
  stream?: Buffer;
}

export interface Increment {
  objects: IncrementObject[];
  /** The trailer: a table's, or the cross-reference stream's dictionary. */
  trailer: Map<string, PdfValue>;
  /** Where its cross-reference section starts: the "xref" keyword, or the cross-reference stream's header. */
  xrefAt: number;
  /** The cross-reference stream, when the update's section is one (it is among `objects` too). */
  xrefStream: IncrementObject | undefined;
  /** The byte just past its "%%EOF". */
  eofEnd: number;
}

/** Thrown when a read needs bytes past the end of what it was given, and those are not the end of the file. */
export class OutOfBytes extends Error {
  constructor(readonly at: number) {
    super(`the bytes held end at byte ${at}`);
  }
}

export const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
export const isDelimiter = (b: number | undefined) =>
  b === 0x28 || b === 0x29 || b === 0x3c || b === 0x3e || b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d || b === 0x2f || b === 0x25;
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
const isRegular = (b: number | undefined) => b !== undefined && !isSpace(b) && !isDelimiter(b);
const hexValue = (b: number) =>
  b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x41 && b <= 0x46 ? b - 0x37 : b >= 0x61 && b <= 0x66 ? b - 0x57 : -1;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)$/;
/** Object numbers and offsets read as integers: at most this many digits (beyond any real file, within a double). */
const MAX_DIGITS = 15;

/** A reader of PDF tokens over `buf`, which holds the file from byte `base` on (to its end when `complete`). */
export class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly base = 0,
    readonly complete = true,
  ) {
    this.pos = start;
  }

  /** The file's byte at the reader's position, for a message. */
  get at(): number {
    return this.base + this.pos;
  }

  /** The bytes ran out: the end of the file, or of what is held of it. */
  end(): never {
    if (this.complete) throw new Error(`the file ends at byte ${this.base + this.buf.length}, inside a value`);
    throw new OutOfBytes(this.base + this.buf.length);
  }

  skipSpace(): void {
    for (;;) {
      while (this.pos < this.buf.length && isSpace(this.buf[this.pos])) this.pos++;
      if (this.buf[this.pos] !== 0x25 /* % */) return;
      while (this.pos < this.buf.length && this.buf[this.pos] !== 0x0a && this.buf[this.pos] !== 0x0d) this.pos++;
    }
  }

  peek(text: string): boolean {
    return this.buf.subarray(this.pos, this.pos + text.length).toString('latin1') === text;
  }

  expect(text: string): void {
    if (text.startsWith('%')) while (this.pos < this.buf.length && isSpace(this.buf[this.pos])) this.pos++;
    else this.skipSpace();
    if (!this.peek(text)) {
      if (this.pos + text.length > this.buf.length && text.startsWith(this.buf.toString('latin1', this.pos))) this.end();
      throw new Error(`expected "${text}" at byte ${this.at}`);
    }
    // A keyword ends where a regular character does not follow it ("endobjx" is another word).
    if (isRegular(text.charCodeAt(text.length - 1)) && isRegular(this.buf[this.pos + text.length]))
      throw new Error(`expected "${text}" at byte ${this.at}`);
    this.pos += text.length;
  }

  token(): string {
    this.skipSpace();
    if (this.pos >= this.buf.length) this.end();
    const start = this.pos;
    while (this.pos < this.buf.length && isRegular(this.buf[this.pos])) this.pos++;
    if (this.pos === start) throw new Error(`unexpected byte at ${this.at}`);
    if (this.pos === this.buf.length && !this.complete) this.end();
    return this.buf.toString('latin1', start, this.pos);
  }

  /** A non-negative integer token. */
  integer(what: string): number {
    const word = this.token();
    if (!/^\d+$/.test(word) || word.length > MAX_DIGITS) throw new Error(`${what} at byte ${this.at - word.length} is not an integer`);
    return Number(word);
  }

  value(depth = 0): PdfValue {
    if (depth > 32) throw new Error(`values nested too deep at byte ${this.at}`);
    this.skipSpace();
    if (this.pos >= this.buf.length) this.end();
    const start = this.at;
    const done = <T extends object>(v: T) => ({ ...v, start, end: this.at });
    const c = this.buf[this.pos];
    if (this.peek('<<')) {
      this.pos += 2;
      const entries = new Map<string, PdfValue>();
      for (;;) {
        this.skipSpace();
        if (this.pos >= this.buf.length) this.end();
        if (this.peek('>>')) {
          this.pos += 2;
          return done({ kind: 'dict' as const, entries });
        }
        const key = this.value(depth + 1);
        if (key.kind !== 'name') throw new Error(`a dictionary key is not a name at byte ${key.start}`);
        // Readers differ on which of two entries counts: neither is read.
        if (entries.has(key.text)) throw new Error(`a dictionary gives ${key.text} twice (byte ${key.start})`);
        this.skipSpace();
        if (this.peek('>>')) throw new Error(`the dictionary key ${key.text} at byte ${key.start} has no value`);
        entries.set(key.text, this.value(depth + 1));
      }
    }
    if (c === 0x5b /* [ */) {
      this.pos++;
      const items: PdfValue[] = [];
      for (;;) {
        this.skipSpace();
        if (this.pos >= this.buf.length) this.end();
        if (this.buf[this.pos] === 0x5d) {
          this.pos++;
          return done({ kind: 'array' as const, items });
        }
        items.push(this.value(depth + 1));
      }
    }
    if (c === 0x2f /* / */) return done({ kind: 'name' as const, text: this.#name() });
    if (c === 0x28 /* ( */) return done({ kind: 'string' as const, bytes: this.#literal(), hex: false });
    if (c === 0x3c /* < */) return done({ kind: 'string' as const, bytes: this.#hex(), hex: true });
    if (c === 0x5d || c === 0x3e || c === 0x29 || c === 0x7b || c === 0x7d) throw new Error(`unexpected byte at ${this.at}`);
    const word = this.token();
    if (NUMBER.test(word)) {
      // "n g R" is a reference.
      if (/^\d+$/.test(word)) {
        const save = this.pos;
        let gen: string | undefined;
        let r: string | undefined;
        try {
          gen = this.token();
          r = this.token();
        } catch (err) {
          if (err instanceof OutOfBytes) throw err;
        }
        if (r === 'R' && gen !== undefined && /^\d+$/.test(gen)) {
          if (word.length > 10 || Number(word) > 2 ** 31 || gen.length > 5 || Number(gen) > 65535)
            throw new Error(`the reference at byte ${start} names no possible object`);
          return done({ kind: 'ref' as const, num: Number(word), gen: Number(gen) });
        }
        this.pos = save;
      }
      return done({ kind: 'number' as const, text: word });
    }
    if (word === 'true' || word === 'false' || word === 'null') return done({ kind: 'keyword' as const, text: word });
    throw new Error(`unexpected "${word.slice(0, 20)}" at byte ${start}`);
  }

  /** A name, its #xx escapes decoded (PDF 32000 7.3.5). */
  #name(): string {
    this.pos++;
    const bytes: number[] = [0x2f];
    while (this.pos < this.buf.length && isRegular(this.buf[this.pos])) {
      const b = this.buf[this.pos]!;
      if (b === 0x23 /* # */) {
        if (this.pos + 2 >= this.buf.length) this.end();
        const hi = hexValue(this.buf[this.pos + 1]!);
        const lo = hexValue(this.buf[this.pos + 2]!);
        if (hi < 0 || lo < 0) throw new Error(`a malformed name at byte ${this.at}`);
        bytes.push(hi * 16 + lo);
        this.pos += 3;
      } else {
        bytes.push(b);
        this.pos++;
      }
    }
    if (this.pos === this.buf.length && !this.complete) this.end();
    if (bytes.includes(0)) throw new Error(`a name holds a null byte at byte ${this.at}`);
    return Buffer.from(bytes).toString('latin1');
  }

  /** A literal string's bytes (PDF 32000 7.3.4.2): escapes decoded, an unescaped end of line read as LF. */
  #literal(): Buffer {
    const out: number[] = [];
    let level = 0;
    const buf = this.buf;
    for (; this.pos < buf.length; this.pos++) {
      const b = buf[this.pos]!;
      if (b === 0x28 && level++ === 0) continue;
      if (b === 0x29 && --level === 0) {
        this.pos++;
        return Buffer.from(out);
      }
      if (b === 0x0d) {
        if (buf[this.pos + 1] === 0x0a) this.pos++;
        out.push(0x0a);
      } else if (b === 0x5c /* \ */) {
        const e = buf[++this.pos];
        if (e === undefined) break;
        const simple: Record<number, number> = {
          0x6e: 0x0a,
          0x72: 0x0d,
          0x74: 0x09,
          0x62: 0x08,
          0x66: 0x0c,
          0x28: 0x28,
          0x29: 0x29,
          0x5c: 0x5c,
        };
        if (simple[e] !== undefined) out.push(simple[e]);
        else if (e >= 0x30 && e <= 0x37) {
          let code = e - 0x30;
          for (let i = 0; i < 2 && buf[this.pos + 1]! >= 0x30 && buf[this.pos + 1]! <= 0x37; i++)
            code = code * 8 + (buf[++this.pos]! - 0x30);
          out.push(code & 0xff);
        } else if (e === 0x0d) {
          if (buf[this.pos + 1] === 0x0a) this.pos++;
        } else if (e !== 0x0a) out.push(e); // "\x" is "x"; a backslash before an end of line continues the line
      } else out.push(b);
    }
    return this.end();
  }

  /** A hexadecimal string's bytes (white space ignored, an odd last digit followed by 0). */
  #hex(): Buffer {
    const out: number[] = [];
    let high = -1;
    for (this.pos++; this.pos < this.buf.length; this.pos++) {
      const b = this.buf[this.pos]!;
      if (b === 0x3e) {
        this.pos++;
        if (high >= 0) out.push(high * 16);
        return Buffer.from(out);
      }
      if (isSpace(b)) continue;
      const v = hexValue(b);
      if (v < 0) throw new Error(`a hexadecimal string holds a byte that is not a digit at byte ${this.at}`);
      if (high < 0) high = v;
      else {
        out.push(high * 16 + v);
        high = -1;
      }
    }
    return this.end();
  }
}

/** A number's value as a canonical decimal: "1", "1.0" and "01.00" read the same; "-0" is "0". */
function canonicalNumber(text: string): string {
  const m = /^([+-]?)(\d*)\.?(\d*)$/.exec(text)!;
  const int = m[2]!.replace(/^0+/, '') || '0';
  const frac = m[3]!.replace(/0+$/, '');
  const digits = frac ? `${int}.${frac}` : int;
  return m[1] === '-' && digits !== '0' ? `-${digits}` : digits;
}

/**
 * Whether two values are the same as a reader uses them: names by their decoded text, strings by their bytes,
 * numbers by value, references by number and generation, arrays and dictionaries entry by entry.
 */
export function sameValue(a: PdfValue, b: PdfValue): boolean {
  switch (a.kind) {
    case 'dict': {
      if (b.kind !== 'dict' || a.entries.size !== b.entries.size) return false;
      for (const [k, v] of a.entries) {
        const w = b.entries.get(k);
        if (!w || !sameValue(v, w)) return false;
      }
      return true;
    }
    case 'array':
      return b.kind === 'array' && a.items.length === b.items.length && a.items.every((v, i) => sameValue(v, b.items[i]!));
    case 'ref':
      return b.kind === 'ref' && a.num === b.num && a.gen === b.gen;
    case 'string':
      return b.kind === 'string' && a.bytes.equals(b.bytes);
    case 'number':
      return b.kind === 'number' && canonicalNumber(a.text) === canonicalNumber(b.text);
    default:
      return b.kind === a.kind && b.text === a.text;
  }
}

/** A value as text, for a message. */
export function describe(v: PdfValue | undefined): string {
  if (!v) return '(none)';
  switch (v.kind) {
    case 'ref':
      return `${v.num} ${v.gen} R`;
    case 'string':
      return v.bytes.length > 40 ? `a string of ${v.bytes.length} bytes` : JSON.stringify(v.bytes.toString('latin1'));
    case 'dict':
      return 'a dictionary';
    case 'array':
      return `an array of ${v.items.length}`;
    default:
      return v.text;
  }
}

/** A direct non-negative integer's value, or undefined. */
export function integerOf(v: PdfValue | undefined): number | undefined {
  return v?.kind === 'number' && /^\d{1,15}$/.test(v.text) ? Number(v.text) : undefined;
}

/** What an update's trailer may say: its size, the (unchanged) catalog and document information, the chain, the ID. */
const TRAILER_KEYS = new Set(['/Size', '/Root', '/Prev', '/ID', '/Info']);
/** ... and, for a cross-reference stream, what describes the stream. */
const XREF_STREAM_KEYS = new Set([...TRAILER_KEYS, '/Type', '/W', '/Index', '/Length', '/Filter', '/DecodeParms']);

/** One entry of a cross-reference section (PDF 32000 7.5.4 and 7.5.8). */
export interface XrefEntry {
  num: number;
  gen: number;
  /** 0: free; 1: at a byte offset; 2: inside an object stream. */
  type: 0 | 1 | 2;
  /** Type 1: the byte offset of its header; type 2: its index in the object stream; type 0: the next free number. */
  offset: number;
  /** Type 2: the object stream's number. */
  stream: number;
}

/** A cross-reference table from its "xref" keyword, with its trailer. Each entry is 20 bytes (7.5.4). */
export function readXrefTable(r: Reader): { entries: XrefEntry[]; trailer: PdfDict } {
  r.expect('xref');
  const entries: XrefEntry[] = [];
  // Subsections: "first count" then count 20-byte entries.
  for (;;) {
    r.skipSpace();
    if (r.peek('trailer')) break;
    const first = r.integer('an xref subsection');
    const count = r.integer('an xref subsection');
    if (count > 10_000_000) throw new Error(`an xref subsection at byte ${r.at} is too long`);
    r.skipSpace();
    for (let i = 0; i < count; i++) {
      if (r.pos + 20 > r.buf.length) r.end();
      const entry = r.buf.toString('latin1', r.pos, r.pos + 18);
      if (!/^\d{10} \d{5} [nf]$/.test(entry)) throw new Error(`a malformed xref entry at byte ${r.at}`);
      // Each entry ends in a two-byte end of line (PDF 32000 7.5.4): a reader that finds less calls the table
      // damaged and rebuilds it by scanning the file, where text planted in the file would win.
      const eol = r.buf.toString('latin1', r.pos + 18, r.pos + 20);
      if (eol !== ' \r' && eol !== ' \n' && eol !== '\r\n') throw new Error(`a malformed xref entry at byte ${r.at}`);
      const inUse = entry[17] === 'n';
      entries.push({
        num: first + i,
        offset: Number(entry.slice(0, 10)),
        gen: Number(entry.slice(11, 16)),
        type: inUse ? 1 : 0,
        stream: 0,
      });
      r.pos += 20;
    }
  }
  r.expect('trailer');
  const trailer = r.value();
  if (trailer.kind !== 'dict') throw new Error(`the trailer at byte ${trailer.start} is not a dictionary`);
  return { entries, trailer };
}

/** The number after the "startxref" at the reader's position. */
export function readStartxref(r: Reader): number {
  r.expect('startxref');
  return r.integer('the startxref offset');
}

/** The most a stream is decoded to: far beyond any cross-reference or object stream a real file has. */
const MAX_DECODED = 64 * 2 ** 20;

/**
 * A stream's data decoded: unencoded, or /FlateDecode with no predictor or a PNG predictor (7.4.4); any other
 * filter is refused with its name.
 */
export function decodeStream(dict: PdfDict, data: Buffer, what: string): Buffer {
  let filter = dict.entries.get('/Filter');
  let parms = dict.entries.get('/DecodeParms');
  if (filter?.kind === 'array' && filter.items.length === 1) filter = filter.items[0];
  if (parms?.kind === 'array' && parms.items.length === 1) parms = parms.items[0];
  if (!filter) {
    if (parms) throw new Error(`${what} has /DecodeParms and no filter`);
    return data;
  }
  if (filter.kind !== 'name' || filter.text !== '/FlateDecode')
    throw new Error(`${what} is encoded with ${describe(filter)}, which is not read`);
  let out: Buffer;
  try {
    out = inflateSync(data, { maxOutputLength: MAX_DECODED });
  } catch (err) {
    throw new Error(`${what} does not decode: ${(err as Error).message}`, { cause: err });
  }
  if (!parms || (parms.kind === 'keyword' && parms.text === 'null')) return out;
  if (parms.kind !== 'dict') throw new Error(`${what} has /DecodeParms that are not a dictionary`);
  for (const k of parms.entries.keys())
    if (!['/Predictor', '/Columns', '/Colors', '/BitsPerComponent'].includes(k)) throw new Error(`${what} has the decode parameter ${k}`);
  const param = (key: string, fallback: number) => {
    const v = parms.entries.get(key);
    const n = v === undefined ? fallback : integerOf(v);
    if (n === undefined) throw new Error(`${what}'s ${key} is not an integer`);
    return n;
  };
  const predictor = param('/Predictor', 1);
  if (predictor === 1) return out;
  if (predictor < 10 || predictor > 15) throw new Error(`${what} uses predictor ${predictor}, which is not read`);
  const colors = param('/Colors', 1);
  const bits = param('/BitsPerComponent', 8);
  const columns = param('/Columns', 1);
  if (![1, 2, 4, 8, 16].includes(bits) || colors < 1 || colors > 32 || columns < 1 || columns > 2 ** 20)
    throw new Error(`${what} has decode parameters out of range`);
  return unpredictPng(out, Math.ceil((colors * bits) / 8), Math.ceil((columns * colors * bits) / 8), what);
}

/** Undoes PNG prediction (RFC 2083 6): each row starts with its filter type. */
function unpredictPng(data: Buffer, pixel: number, row: number, what: string): Buffer {
  if (data.length % (row + 1) !== 0) throw new Error(`${what}'s rows are not whole`);
  const rows = data.length / (row + 1);
  const out = Buffer.alloc(rows * row);
  for (let y = 0; y < rows; y++) {
    const type = data[y * (row + 1)]!;
    const src = y * (row + 1) + 1;
    const at = y * row;
    for (let x = 0; x < row; x++) {
      const raw = data[src + x]!;
      const left = x >= pixel ? out[at + x - pixel]! : 0;
      const up = y > 0 ? out[at - row + x]! : 0;
      const upLeft = y > 0 && x >= pixel ? out[at - row + x - pixel]! : 0;
      let v: number;
      if (type === 0) v = raw;
      else if (type === 1) v = raw + left;
      else if (type === 2) v = raw + up;
      else if (type === 3) v = raw + ((left + up) >> 1);
      else if (type === 4) {
        const p = left + up - upLeft;
        const pa = Math.abs(p - left);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - upLeft);
        v = raw + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
      } else throw new Error(`${what} has a row with PNG filter type ${type}`);
      out[at + x] = v & 0xff;
    }
  }
  return out;
}

/**
 * The entries of a cross-reference stream (7.5.8), from its dictionary and decoded data: /W, /Index (default
 * [0 /Size]), each row exactly /W long, every entry of type 0, 1 or 2.
 */
export function readXrefStream(dict: PdfDict, data: Buffer, at: number): XrefEntry[] {
  const what = `the cross-reference stream at byte ${at}`;
  const w = dict.entries.get('/W');
  const widths = w?.kind === 'array' ? w.items.map(integerOf) : [];
  if (widths.length !== 3 || widths.some((n) => n === undefined || n > 8)) throw new Error(`${what} has no readable /W`);
  const [w0, w1, w2] = widths as [number, number, number];
  const size = integerOf(dict.entries.get('/Size'));
  if (size === undefined) throw new Error(`${what} has no /Size`);
  const index = dict.entries.get('/Index');
  const ranges = index === undefined ? [0, size] : index.kind === 'array' ? index.items.map(integerOf) : [];
  if (ranges.length === 0 || ranges.length % 2 !== 0 || ranges.some((n) => n === undefined))
    throw new Error(`${what} has no readable /Index`);
  const decoded = decodeStream(dict, data, what);
  const rowBytes = w0 + w1 + w2;
  let rows = 0;
  for (let i = 1; i < ranges.length; i += 2) rows += ranges[i]!;
  if (rowBytes === 0 || decoded.length !== rows * rowBytes)
    throw new Error(`${what} holds ${decoded.length} bytes, not the ${rows} rows of ${rowBytes} its /W and /Index give`);
  const field = (at: number, width: number) => {
    let v = 0;
    for (let i = 0; i < width; i++) v = v * 256 + decoded[at + i]!;
    return v;
  };
  const entries: XrefEntry[] = [];
  let pos = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    for (let k = 0; k < ranges[i + 1]!; k++, pos += rowBytes) {
      const num = ranges[i]! + k;
      const type = w0 === 0 ? 1 : field(pos, w0);
      const f2 = field(pos + w0, w1);
      const f3 = field(pos + w0 + w1, w2);
      if (type === 0) entries.push({ num, type, gen: f3, offset: f2, stream: 0 });
      else if (type === 1) entries.push({ num, type, gen: f3, offset: f2, stream: 0 });
      else if (type === 2) entries.push({ num, type, gen: 0, offset: f3, stream: f2 });
      else throw new Error(`${what} gives object ${num} the entry type ${type}`);
    }
  }
  return entries;
}

/**
 * A stream object's data, from the reader's position just past its dictionary: "stream", an end of line (CRLF or
 * LF, 7.3.8.1), `length` bytes, "endstream". Returns where the data starts.
 */
export function readStreamData(r: Reader, length: number, what: string): { start: number; data: Buffer } {
  r.expect('stream');
  if (r.buf[r.pos] === 0x0d) r.pos++;
  if (r.pos >= r.buf.length) r.end();
  if (r.buf[r.pos] !== 0x0a) throw new Error(`${what}: no end of line after "stream"`);
  r.pos++;
  const start = r.pos;
  if (start + length > r.buf.length) r.end();
  r.pos += length;
  r.expect('endstream');
  return { start: r.base + start, data: r.buf.subarray(start, start + length) };
}

/**
 * Reads the incremental updates in `pdf` from byte `from` (where the sealed revision ends) to its end: each a set of
 * objects, a cross-reference section (an "xref" table and trailer, or a cross-reference stream) and "startxref",
 * ending in `%%EOF`. Throws with the reason on anything else. `base`: where `pdf` starts in the file, when it holds
 * only its end; `prevXref`: the offset the sealed revision's `startxref` gives.
 *
 * A reader finds each object by the offset the newest cross-reference section gives, not by reading the file in
 * order: so each update's section must list exactly the objects the update defines, each at the byte where it is
 * written, free nothing, and chain to the revision before it (/Prev, and its `startxref` to itself). Otherwise
 * what a reader shows is not what was read here (an entry pointing into a stream's data, an object freed).
 */
export function readIncrements(pdf: Buffer, from: number, base = 0, prevXref?: number): Increment[] {
  const r = new Reader(pdf, from, base);
  const increments: Increment[] = [];
  let prev = prevXref;
  /** Where each keyword a reader rebuilding the table would look for stands (its position in `pdf`). */
  const structure = new Set<number>();
  const skipEol = () => {
    while (r.pos < pdf.length && isSpace(pdf[r.pos])) r.pos++;
  };
  skipEol();
  while (r.pos < pdf.length) {
    if (pdf[r.pos] === 0x25) throw new Error(`the bytes at ${r.at}, after a revision's end, are a comment, not an update`);
    const objects: IncrementObject[] = [];
    const at = new Map<number, IncrementObject>();
    let xrefStream: IncrementObject | undefined;
    for (;;) {
      r.skipSpace();
      if (r.peek('xref') || r.peek('startxref')) break;
      const offset = r.at;
      structure.add(r.pos);
      const num = r.token();
      const gen = r.token();
      if (!/^\d{1,10}$/.test(num) || !/^\d{1,5}$/.test(gen))
        throw new Error(`expected an object or a cross-reference section at byte ${offset}`);
      r.expect('obj');
      const value = r.value();
      let stream: Buffer | undefined;
      r.skipSpace();
      if (r.peek('stream')) {
        if (value.kind !== 'dict') throw new Error(`object ${num} has a stream without a dictionary`);
        const length = integerOf(value.entries.get('/Length'));
        if (length === undefined) throw new Error(`object ${num}: its stream /Length is not a direct integer`);
        stream = readStreamData(r, length, `object ${num}`).data;
      }
      r.expect('endobj');
      if (at.has(Number(num))) throw new Error(`an update defines object ${num} twice`);
      const o: IncrementObject = { num: Number(num), gen: Number(gen), value, offset, ...(stream ? { stream } : {}) };
      at.set(o.num, o);
      objects.push(o);
    }
    let xrefAt: number;
    let entries: XrefEntry[];
    let trailer: PdfDict;
    if (r.peek('xref')) {
      xrefAt = r.at;
      structure.add(r.pos);
      ({ entries, trailer } = readXrefTable(r));
      structure.add(r.buf.lastIndexOf('trailer', r.pos));
      for (const key of trailer.entries.keys()) if (!TRAILER_KEYS.has(key)) throw new Error(`the update's trailer sets ${key}`);
    } else {
      // A cross-reference stream: the update's last object, a /Type /XRef stream.
      xrefStream = objects.at(-1);
      const dict = xrefStream?.value;
      if (
        !xrefStream?.stream ||
        dict?.kind !== 'dict' ||
        dict.entries.get('/Type')?.kind !== 'name' ||
        (dict.entries.get('/Type') as { text: string }).text !== '/XRef'
      )
        throw new Error(`expected a cross-reference table or stream before the startxref at byte ${r.at}`);
      xrefAt = xrefStream.offset;
      trailer = dict;
      entries = readXrefStream(dict, xrefStream.stream, xrefAt);
      for (const key of dict.entries.keys())
        if (!XREF_STREAM_KEYS.has(key)) throw new Error(`the update's cross-reference stream sets ${key}`);
    }
    r.skipSpace();
    structure.add(r.pos);
    r.expect('startxref');
    const startxref = r.token();
    r.expect('%%EOF');
    const eofEnd = r.at;
    const listed = new Set<number>();
    for (const e of entries) {
      if (listed.has(e.num)) throw new Error(`the update's cross-reference section lists object ${e.num} twice`);
      listed.add(e.num);
      if (e.type === 0) {
        if (e.num !== 0 || e.gen !== 65535) throw new Error(`the update's cross-reference section frees object ${e.num}`);
        continue;
      }
      if (e.type === 2) throw new Error(`the update's cross-reference section places object ${e.num} in an object stream`);
      const defined = at.get(e.num);
      if (!defined || defined.gen !== e.gen || defined.offset !== e.offset) {
        throw new Error(
          `the update's cross-reference table places object ${e.num} at byte ${e.offset}, where the update does not define it`,
        );
      }
    }
    // A cross-reference stream need not list itself; every other object is listed.
    for (const num of at.keys())
      if (!listed.has(num) && at.get(num) !== xrefStream)
        throw new Error(`the update's cross-reference section does not list object ${num}`);
    if (startxref !== String(xrefAt))
      throw new Error(`the update's startxref (${startxref}) is not where its cross-reference table is (${xrefAt})`);
    const prevValue = trailer.entries.get('/Prev');
    if (prev !== undefined && integerOf(prevValue) !== prev) {
      throw new Error(`the update's trailer does not chain to the revision before it (/Prev ${describe(prevValue)}, expected ${prev})`);
    }
    prev = xrefAt;
    increments.push({ objects, trailer: trailer.entries, xrefAt, xrefStream, eofEnd });
    skipEol();
  }
  plantedStructure(pdf, from, structure, base);
  return increments;
}

/**
 * Refuses an object header or table keyword anywhere in the updates but where the updates' own structure puts
 * one (inside a stream's data, a string, a comment). A reader that finds a table damaged rebuilds it by
 * scanning for such text, and the last definition it finds wins: whatever could make a reader rebuild, text
 * planted for it to find is refused. Binary validation data that happens to hold such text is refused too.
 */
function plantedStructure(pdf: Buffer, from: number, structure: Set<number>, base: number): void {
  const refuse = (what: string, at: number) => {
    throw new Error(`an update after the seal holds "${what}" at byte ${base + at}, outside its structure`);
  };
  for (const keyword of ['xref', 'trailer', 'startxref']) {
    for (let at = pdf.indexOf(keyword, from); at !== -1; at = pdf.indexOf(keyword, at + 1)) {
      const inStartxref = keyword === 'xref' && at >= 5 && pdf.toString('latin1', at - 5, at) === 'start';
      if (!structure.has(inStartxref ? at - 5 : at)) refuse(keyword, at);
    }
  }
  // "n g obj": read back from each "obj" (linear, where a regular expression would backtrack over long digit runs).
  for (let at = pdf.indexOf('obj', from); at !== -1; at = pdf.indexOf('obj', at + 1)) {
    let i = at - 1;
    const skip = (test: (b: number) => boolean) => {
      const stop = i;
      while (i >= from && test(pdf[i]!)) i--;
      return i < stop;
    };
    if (!skip(isSpace) || !skip(isDigit) || !skip(isSpace) || !skip(isDigit)) continue;
    // The header starts at the number's first digit (it reads as one to a reader whatever precedes it).
    if (!structure.has(i + 1)) refuse(`${pdf.toString('latin1', i + 1, at + 3).replace(/\s+/g, ' ')}`, i + 1);
  }
}
