/**
 * The incremental updates appended to a sealed PDF, read strictly enough to
 * tell what they change (PDF 32000 7.5.6). A PAdES seal stays valid when later
 * revisions add only validation data (a /DSS) and document time-stamps
 * (ETSI EN 319 142-1, B-LT and B-LTA); anything else appended after a seal
 * (a changed page, a new annotation that shows) is a change to what was
 * signed. The reader is conservative: a construct it does not expect (an
 * object stream, an indirect /Length, an unknown key) is reported as a
 * change, never passed.
 */

/** A PDF value as written: kept as its source text, with the parsed shape where the checks need it. */
export type PdfValue =
  | { kind: 'dict'; entries: Map<string, PdfValue>; text: string }
  | { kind: 'array'; items: PdfValue[]; text: string }
  | { kind: 'ref'; num: number; gen: number; text: string }
  | { kind: 'name' | 'number' | 'string' | 'keyword'; text: string };

/** One object defined in an increment. */
export interface IncrementObject {
  num: number;
  gen: number;
  value: PdfValue;
  /** A stream's bytes (still encoded), when the object is a stream. */
  stream?: Buffer;
}

export interface Increment {
  objects: IncrementObject[];
  trailer: Map<string, PdfValue>;
}

class Reader {
  pos: number;
  /** `buf` holds the file from byte `base` on (a window of a large file): messages name bytes of the file. */
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly base = 0,
  ) {
    this.pos = start;
  }

  /** The file's byte at the reader's position, for a message. */
  get at(): number {
    return this.base + this.pos;
  }

  skipSpace(): void {
    for (;;) {
      while (this.pos < this.buf.length && isSpace(this.buf[this.pos]!)) this.pos++;
      if (this.buf[this.pos] !== 0x25 /* % */) return;
      while (this.pos < this.buf.length && this.buf[this.pos] !== 0x0a && this.buf[this.pos] !== 0x0d) this.pos++;
    }
  }

  peek(text: string): boolean {
    return this.buf.subarray(this.pos, this.pos + text.length).toString('latin1') === text;
  }

  expect(text: string): void {
    if (text.startsWith('%')) while (this.pos < this.buf.length && isSpace(this.buf[this.pos]!)) this.pos++;
    else this.skipSpace();
    if (!this.peek(text)) throw new Error(`expected "${text}" at byte ${this.at}`);
    this.pos += text.length;
  }

  token(): string {
    this.skipSpace();
    const start = this.pos;
    while (this.pos < this.buf.length && !isSpace(this.buf[this.pos]!) && !isDelimiter(this.buf[this.pos]!)) this.pos++;
    if (this.pos === start) throw new Error(`unexpected byte at ${this.at}`);
    return this.buf.subarray(start, this.pos).toString('latin1');
  }

  value(depth = 0): PdfValue {
    if (depth > 32) throw new Error('values nested too deep');
    this.skipSpace();
    const start = this.pos;
    const text = () => this.buf.subarray(start, this.pos).toString('latin1');
    if (this.peek('<<')) {
      this.pos += 2;
      const entries = new Map<string, PdfValue>();
      for (;;) {
        this.skipSpace();
        if (this.peek('>>')) {
          this.pos += 2;
          return { kind: 'dict', entries, text: text() };
        }
        const key = this.value(depth + 1);
        if (key.kind !== 'name') throw new Error(`a dictionary key is not a name at byte ${this.at}`);
        if (entries.has(key.text)) throw new Error(`duplicate key ${key.text}`);
        entries.set(key.text, this.value(depth + 1));
      }
    }
    const c = this.buf[this.pos];
    if (c === 0x5b /* [ */) {
      this.pos++;
      const items: PdfValue[] = [];
      for (;;) {
        this.skipSpace();
        if (this.buf[this.pos] === 0x5d) {
          this.pos++;
          return { kind: 'array', items, text: text() };
        }
        if (this.pos >= this.buf.length) throw new Error('unterminated array');
        items.push(this.value(depth + 1));
      }
    }
    if (c === 0x2f /* / */) {
      this.pos++;
      while (this.pos < this.buf.length && !isSpace(this.buf[this.pos]!) && !isDelimiter(this.buf[this.pos]!)) this.pos++;
      return { kind: 'name', text: text() };
    }
    if (c === 0x28 /* ( */) {
      let level = 0;
      for (; this.pos < this.buf.length; this.pos++) {
        const b = this.buf[this.pos]!;
        if (b === 0x5c) this.pos++;
        else if (b === 0x28) level++;
        else if (b === 0x29 && --level === 0) {
          this.pos++;
          return { kind: 'string', text: text() };
        }
      }
      throw new Error('unterminated string');
    }
    if (c === 0x3c /* < */) {
      const end = this.buf.indexOf(0x3e, this.pos);
      if (end === -1) throw new Error('unterminated hex string');
      this.pos = end + 1;
      return { kind: 'string', text: text() };
    }
    const word = this.token();
    if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(word)) {
      // "n g R" is a reference.
      const save = this.pos;
      if (/^\d+$/.test(word)) {
        try {
          const gen = this.token();
          const r = this.token();
          if (/^\d+$/.test(gen) && r === 'R') return { kind: 'ref', num: Number(word), gen: Number(gen), text: text() };
        } catch {
          // not a reference
        }
        this.pos = save;
      }
      return { kind: 'number', text: word };
    }
    if (word === 'true' || word === 'false' || word === 'null') return { kind: 'keyword', text: word };
    throw new Error(`unexpected "${word.slice(0, 20)}" at byte ${this.base + start}`);
  }
}

const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
const isDelimiter = (b: number) => '()<>[]{}/%'.includes(String.fromCharCode(b));

/** What an update's trailer may say: its size, the (unchanged) catalog and document information, the chain, the ID. */
const TRAILER_KEYS = new Set(['/Size', '/Root', '/Prev', '/ID', '/Info']);

/** One entry of a cross-reference table. */
export interface XrefEntry {
  num: number;
  gen: number;
  offset: number;
  inUse: boolean;
}

/** A cross-reference table from its "xref" keyword, with its trailer: what it lists, and the trailer. */
function readXref(r: Reader, strict = false): { entries: XrefEntry[]; trailer: Map<string, PdfValue> } {
  r.expect('xref');
  const entries: XrefEntry[] = [];
  // Subsections: "first count" then count 20-byte entries.
  for (;;) {
    r.skipSpace();
    if (r.peek('trailer')) break;
    const first = r.token();
    const count = r.token();
    if (!/^\d+$/.test(first) || !/^\d+$/.test(count)) throw new Error(`a malformed xref subsection at byte ${r.at}`);
    for (let i = 0; i < Number(count); i++) {
      r.skipSpace();
      const entry = r.buf.subarray(r.pos, r.pos + 18).toString('latin1');
      if (!/^\d{10} \d{5} [nf]$/.test(entry)) throw new Error(`a malformed xref entry at byte ${r.at}`);
      entries.push({
        num: Number(first) + i,
        offset: Number(entry.slice(0, 10)),
        gen: Number(entry.slice(11, 16)),
        inUse: entry[17] === 'n',
      });
      r.pos += 18;
      // Each entry is 20 bytes, ending in a two-byte end of line (PDF 32000 7.5.4): a reader that finds less calls
      // the table damaged and rebuilds it by scanning the file, where text planted in an update would win.
      if (strict) {
        const eol = r.buf.subarray(r.pos, r.pos + 2).toString('latin1');
        if (eol !== ' \r' && eol !== ' \n' && eol !== '\r\n') throw new Error(`a malformed xref entry at byte ${r.at - 18}`);
        r.pos += 2;
      }
    }
  }
  r.expect('trailer');
  const trailer = r.value();
  if (trailer.kind !== 'dict') throw new Error('the trailer is not a dictionary');
  return { entries, trailer: trailer.entries };
}

/**
 * The cross-reference table at byte `pos` of `buf` (which holds the file from byte `base` on): its entries and
 * its trailer. A cross-reference stream is not read: the caller refuses what it cannot read.
 */
export function readXrefTable(buf: Buffer, pos: number, base = 0): { entries: XrefEntry[]; trailer: Map<string, PdfValue> } {
  return readXref(new Reader(buf, pos, base));
}

/** The number after the "startxref" at byte `pos` of `buf` (which holds the file from byte `base` on). */
export function readStartxref(buf: Buffer, pos: number, base = 0): number {
  const r = new Reader(buf, pos, base);
  r.expect('startxref');
  const offset = r.token();
  if (!/^\d+$/.test(offset)) throw new Error(`startxref at byte ${base + pos} names no offset`);
  return Number(offset);
}

/** The indirect object defined at byte `pos` of `buf` (which holds the file from byte `base` on). */
export function readObject(buf: Buffer, pos: number, base = 0): { num: number; gen: number; value: PdfValue } {
  const r = new Reader(buf, pos, base);
  const num = r.token();
  const gen = r.token();
  if (!/^\d+$/.test(num) || !/^\d+$/.test(gen)) throw new Error(`no object at byte ${base + pos}`);
  r.expect('obj');
  return { num: Number(num), gen: Number(gen), value: r.value() };
}

/**
 * Reads the incremental updates in `pdf` from byte `from` (where the sealed
 * revision ends) to its end: each a set of objects, an `xref` table and a
 * trailer, ending in `%%EOF`. Throws with the reason on anything else.
 * `base`: where `pdf` starts in the file, when it holds only its end;
 * `prevXref`: the offset the sealed revision's `startxref` gives.
 *
 * A reader finds each object by the offset the newest cross-reference table
 * gives, not by reading the file in order: so each update's table must list
 * exactly the objects the update defines, each at the byte where it is
 * written, free nothing, and chain to the revision before it (/Prev, and its
 * `startxref` to itself). Otherwise what a reader shows is not what was
 * read here (an entry pointing into a stream's data, an object freed).
 */
export function readIncrements(pdf: Buffer, from: number, base = 0, prevXref?: number): Increment[] {
  const r = new Reader(pdf, from, base);
  const increments: Increment[] = [];
  let prev = prevXref;
  /** Where each keyword a reader rebuilding the table would look for stands (its position in `pdf`). */
  const structure = new Set<number>();
  r.skipSpace();
  while (r.pos < pdf.length) {
    const objects: IncrementObject[] = [];
    const at = new Map<number, { gen: number; offset: number }>();
    for (;;) {
      r.skipSpace();
      if (r.peek('xref')) break;
      const offset = r.at;
      structure.add(r.pos);
      const num = r.token();
      const gen = r.token();
      if (!/^\d+$/.test(num) || !/^\d+$/.test(gen)) throw new Error(`expected an object or an xref table at byte ${r.at}`);
      r.expect('obj');
      const value = r.value();
      let stream: Buffer | undefined;
      r.skipSpace();
      if (r.peek('stream')) {
        if (value.kind !== 'dict') throw new Error(`object ${num} has a stream without a dictionary`);
        const length = value.entries.get('/Length');
        if (length?.kind !== 'number' || !/^\d+$/.test(length.text))
          throw new Error(`object ${num}: its stream /Length is not a direct integer`);
        r.pos += 'stream'.length;
        if (pdf[r.pos] === 0x0d) r.pos++;
        if (pdf[r.pos] !== 0x0a) throw new Error(`object ${num}: no end of line after "stream"`);
        r.pos++;
        stream = pdf.subarray(r.pos, r.pos + Number(length.text));
        r.pos += Number(length.text);
        r.expect('endstream');
      }
      r.expect('endobj');
      if (at.has(Number(num))) throw new Error(`an update defines object ${num} twice`);
      at.set(Number(num), { gen: Number(gen), offset });
      objects.push({ num: Number(num), gen: Number(gen), value, ...(stream ? { stream } : {}) });
    }
    const xrefAt = r.at;
    structure.add(r.pos);
    const { entries, trailer } = readXref(r, true);
    structure.add(r.buf.lastIndexOf('trailer', r.pos));
    r.skipSpace();
    structure.add(r.pos);
    r.expect('startxref');
    const startxref = r.token();
    r.expect('%%EOF');
    const listed = new Set<number>();
    for (const e of entries) {
      if (listed.has(e.num)) throw new Error(`the update's cross-reference table lists object ${e.num} twice`);
      listed.add(e.num);
      if (e.num === 0) {
        if (e.inUse || e.gen !== 65535) throw new Error("the update's cross-reference table uses object 0");
        continue;
      }
      const defined = at.get(e.num);
      if (!e.inUse) throw new Error(`the update's cross-reference table frees object ${e.num}`);
      if (!defined || defined.gen !== e.gen || defined.offset !== e.offset) {
        throw new Error(
          `the update's cross-reference table places object ${e.num} at byte ${e.offset}, where the update does not define it`,
        );
      }
    }
    for (const num of at.keys()) if (!listed.has(num)) throw new Error(`the update's cross-reference table does not list object ${num}`);
    if (startxref !== String(xrefAt))
      throw new Error(`the update's startxref (${startxref}) is not where its cross-reference table is (${xrefAt})`);
    for (const key of trailer.keys()) {
      if (!TRAILER_KEYS.has(key)) throw new Error(`the update's trailer sets ${key}`);
    }
    const prevValue = trailer.get('/Prev');
    if (prev !== undefined && (prevValue?.kind !== 'number' || prevValue.text !== String(prev))) {
      throw new Error(
        `the update's trailer does not chain to the revision before it (/Prev ${prevValue?.text ?? 'missing'}, expected ${prev})`,
      );
    }
    prev = xrefAt;
    increments.push({ objects, trailer });
    // After %%EOF: an end of line, then the next increment or the end of the file.
    while (r.pos < pdf.length && (pdf[r.pos] === 0x0d || pdf[r.pos] === 0x0a)) r.pos++;
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
