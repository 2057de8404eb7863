/**
 * A revision of a PDF read as a PDF reader reads it (PDF 32000 7.5): from the `startxref` that ends it, through
 * its cross-reference sections (tables, or cross-reference streams with /W, /Index and /Prev), each object at the
 * place its section gives, objects inside object streams included. One algorithm for a file held whole and for
 * what one pass kept of a large one (`PdfBytes`): a part it needs and that is not held is refused with its reason,
 * never skipped.
 *
 * `checkBody` holds the revision's bytes to its sections, so that every reader reads it alike: no object number
 * defined twice in one revision (pdf-lib keeps the last definition, a reader the one its section names), no object
 * header outside every section (what a reader that rebuilds a damaged table, or pdf-lib, would read), no object
 * stream no section reads from, no hybrid (/XRefStm) or encrypted file, no /Prev that loops or leaves the file.
 */
import type { PdfBytes, StructureMarks } from './pdf-bytes.js';
import {
  decodeStream,
  describe,
  integerOf,
  OutOfBytes,
  Reader,
  readStreamData,
  readXrefStream,
  readXrefTable,
  type PdfDict,
  type PdfValue,
  type XrefEntry,
} from './pdf-increments.js';

/** One cross-reference section: a table and its trailer, or a cross-reference stream and its dictionary. */
export interface XrefSection {
  /** Where it starts: the "xref" keyword, or the cross-reference stream's object header. */
  at: number;
  kind: 'table' | 'stream';
  entries: XrefEntry[];
  trailer: PdfDict;
  /** The cross-reference stream's object number and generation. */
  object?: { num: number; gen: number };
}

/** An object as read. */
export interface PdfObject {
  num: number;
  gen: number;
  value: PdfValue;
  /** Where its header starts; undefined for an object inside an object stream. */
  offset: number | undefined;
  /** A stream's data: where it starts, its length, the bytes when held, and whether "endstream" was seen after it. */
  stream?: { start: number; length: number; data: Buffer | undefined; ended: boolean };
}

/** A decoded object stream (7.5.7): its objects' numbers and offsets, and its decoded data. */
interface ObjectStream {
  num: number;
  offset: number;
  pairs: [number, number][];
  first: number;
  decoded: Buffer;
  /** Where its data starts in the file: its dictionary lies before. */
  dataStart: number;
}

/** Why a read outside what is held fails. */
export function outsideHeld(pdf: PdfBytes, what: string, at: number): Error {
  return new Error(`${what} at byte ${at} lies outside ${pdf.held}, all a check of a file this large reads`);
}

/** Sections already read from one PdfBytes, by offset: every revision of a file shares its older ones. */
const SECTIONS = new WeakMap<PdfBytes, Map<number, XrefSection>>();

/** A reader at byte `at` of the file, over the held window that contains it. */
function readerAt(pdf: PdfBytes, at: number, what: string): Reader {
  if (at < 0 || at >= pdf.length) throw new Error(`${what} at byte ${at} is outside the file (of ${pdf.length} bytes)`);
  const w = pdf.windowAt(at);
  if (!w) throw outsideHeld(pdf, what, at);
  return new Reader(w.buf, at - w.start, w.start, w.start + w.buf.length === pdf.length);
}

/** Runs a read, turning a read past the bytes held into the reason. */
function held<T>(pdf: PdfBytes, what: string, at: number, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof OutOfBytes) throw outsideHeld(pdf, what, at);
    throw err;
  }
}

/** The "startxref N %%EOF" at byte `at`: N, and the byte past %%EOF. */
export function readRevisionEnd(pdf: PdfBytes, at: number): { startxref: number; eofEnd: number } {
  return held(pdf, 'the startxref', at, () => {
    const r = readerAt(pdf, at, 'the startxref');
    r.expect('startxref');
    const startxref = r.integer('the startxref offset');
    r.expect('%%EOF');
    return { startxref, eofEnd: r.at };
  });
}

/** Whether `end` is `eofEnd` or an end of line after it (what a signature covering its revision may end at). */
export function endsRevision(pdf: PdfBytes, eofEnd: number, end: number): boolean {
  if (end < eofEnd || end > eofEnd + 2) return false;
  const eol = pdf.slice(eofEnd, end)?.toString('latin1');
  return eol === '' || eol === '\n' || eol === '\r' || eol === '\r\n';
}

/**
 * A revision: the cross-reference sections from `startxref` on (newest first, following /Prev) and the objects they
 * place. `end`: where the revision ends; its sections and objects lie before it.
 */
export class PdfRevision {
  readonly sections: XrefSection[] = [];
  /** The newest section's trailer. */
  readonly trailer: PdfDict;
  readonly #entries = new Map<number, XrefEntry>();
  readonly #objects = new Map<string, PdfObject>();
  readonly #streams = new Map<number, ObjectStream>();
  /** Objects being read, for a /Length that leads back to one. */
  readonly #reading = new Set<string>();

  constructor(
    readonly pdf: PdfBytes,
    startxref: number,
    readonly end: number,
  ) {
    const seen = new Set<number>();
    let offset: number | undefined = startxref;
    while (offset !== undefined) {
      if (seen.has(offset)) throw new Error(`the cross-reference sections' /Prev chain loops back to byte ${offset}`);
      seen.add(offset);
      if (offset >= pdf.length) throw new Error(`a cross-reference offset (${offset}) points outside the file (of ${pdf.length} bytes)`);
      if (offset >= end) throw new Error(`a cross-reference offset (${offset}) points past the end of its revision (byte ${end})`);
      const section = this.#section(offset);
      // A hybrid file lists some objects only in the stream /XRefStm names: readers that know streams and readers that
      // do not read two different documents.
      if (section.trailer.entries.has('/XRefStm'))
        throw new Error(
          `the trailer at byte ${offset} names a cross-reference stream (/XRefStm): a hybrid-reference file, which readers read two ways`,
        );
      if (section.trailer.entries.has('/Encrypt')) throw new Error(`the trailer at byte ${offset} names /Encrypt: the file is encrypted`);
      this.sections.push(section);
      for (const e of section.entries) if (!this.#entries.has(e.num)) this.#entries.set(e.num, e);
      const prev = section.trailer.entries.get('/Prev');
      offset = prev === undefined ? undefined : integerOf(prev);
      if (prev !== undefined && offset === undefined)
        throw new Error(`the trailer at byte ${section.at} names a /Prev that is not a byte offset (${describe(prev)})`);
    }
    this.trailer = this.sections[0]!.trailer;
  }

  /** The entry the revision gives an object number (its newest section's), if any. */
  entry(num: number): XrefEntry | undefined {
    return this.#entries.get(num);
  }

  /** The object `num gen R` names, or undefined when the revision has none (free, absent, another generation). */
  object(num: number, gen: number): PdfObject | undefined {
    const e = this.#entries.get(num);
    if (!e || e.type === 0 || e.gen !== gen) return undefined;
    return e.type === 1 ? this.objectAt(e.offset, num, gen) : this.#inStream(num, e.stream, e.offset);
  }

  /** A value with a reference followed (once): what a reader sees there; undefined for null or nothing. */
  resolve(v: PdfValue | undefined): PdfValue | undefined {
    if (v?.kind !== 'ref') return v?.kind === 'keyword' && v.text === 'null' ? undefined : v;
    const o = this.object(v.num, v.gen);
    return o === undefined || (o.value.kind === 'keyword' && o.value.text === 'null') ? undefined : o.value;
  }

  /** The object whose header is at byte `offset`, which must be `num gen obj`. */
  objectAt(offset: number, num: number, gen: number): PdfObject {
    const key = `${offset} ${num} ${gen}`;
    const known = this.#objects.get(key);
    if (known) return known;
    const what = `object ${num}`;
    // A stream's /Length names an object that is read first: one that leads back here would never end.
    if (this.#reading.has(key)) throw new Error(`${what}'s stream /Length refers back to itself`);
    if (offset >= this.end) throw new Error(`the cross-reference places ${what} at byte ${offset}, past the end of its revision`);
    this.#reading.add(key);
    try {
      return this.#read(offset, num, gen, key, what);
    } finally {
      this.#reading.delete(key);
    }
  }

  #read(offset: number, num: number, gen: number, key: string, what: string): PdfObject {
    const read = held(this.pdf, what, offset, () => {
      const r = readerAt(this.pdf, offset, what);
      const n = r.integer(`the header of ${what}`);
      const g = r.integer(`the header of ${what}`);
      r.expect('obj');
      if (n !== num || g !== gen)
        throw new Error(`the cross-reference places object ${num} ${gen} at byte ${offset}, where object ${n} ${g} is`);
      const value = r.value();
      r.skipSpace();
      if (!r.peek('stream')) {
        r.expect('endobj');
        return { num, gen, value, offset };
      }
      if (value.kind !== 'dict') throw new Error(`${what} at byte ${offset} has a stream without a dictionary`);
      const length = this.#length(value, what);
      r.expect('stream');
      if (r.buf[r.pos] === 0x0d) r.pos++;
      if (r.pos >= r.buf.length) r.end();
      if (r.buf[r.pos] !== 0x0a) throw new Error(`${what} at byte ${offset}: no end of line after "stream"`);
      const start = r.at + 1;
      const data = this.pdf.slice(start, start + length);
      // The end: "endstream" and "endobj" right after the data, when those bytes are held.
      let ended = false;
      if (start + length > this.end) throw new Error(`${what} at byte ${offset}: its stream runs past the end of its revision`);
      const tail = this.pdf.windowAt(start + length);
      if (tail && tail.start + tail.buf.length >= Math.min(this.pdf.length, start + length + 64)) {
        const t = new Reader(tail.buf, start + length - tail.start, tail.start, tail.start + tail.buf.length === this.pdf.length);
        held(this.pdf, what, start + length, () => {
          t.expect('endstream');
          t.expect('endobj');
        });
        ended = true;
      }
      return { num, gen, value, offset, stream: { start, length, data, ended } };
    });
    this.#objects.set(key, read);
    return read;
  }

  /** A stream's /Length: a direct integer, or a reference to one (not itself a stream). */
  #length(dict: PdfDict, what: string): number {
    const v = dict.entries.get('/Length');
    let n = integerOf(v);
    if (n === undefined && v?.kind === 'ref') {
      const e = this.#entries.get(v.num);
      if (e?.type === 1 && e.gen === v.gen) {
        const target = this.objectAt(e.offset, v.num, v.gen);
        if (!target.stream) n = integerOf(target.value);
      } else if (e?.type === 2 && v.gen === 0) n = integerOf(this.#inStream(v.num, e.stream, e.offset).value);
    }
    if (n === undefined) throw new Error(`${what}: its stream /Length is not an integer (${describe(v)})`);
    return n;
  }

  /** The cross-reference section at byte `offset`: a table, or a cross-reference stream. */
  #section(offset: number): XrefSection {
    let cache = SECTIONS.get(this.pdf);
    if (!cache) SECTIONS.set(this.pdf, (cache = new Map<number, XrefSection>()));
    const known = cache.get(offset);
    if (known) return known;
    const what = 'the cross-reference section';
    const section = held(this.pdf, what, offset, (): XrefSection => {
      const r = readerAt(this.pdf, offset, what);
      if (r.peek('xref')) {
        const { entries, trailer } = readXrefTable(r);
        return { at: offset, kind: 'table', entries, trailer };
      }
      let num: number;
      let gen: number;
      try {
        num = r.integer(what);
        gen = r.integer(what);
        r.expect('obj');
      } catch (err) {
        if (err instanceof OutOfBytes) throw err;
        throw new Error(`the cross-reference at byte ${offset} is neither a table nor a cross-reference stream`, { cause: err });
      }
      const dict = r.value();
      const type = dict.kind === 'dict' ? dict.entries.get('/Type') : undefined;
      if (dict.kind !== 'dict' || type?.kind !== 'name' || type.text !== '/XRef')
        throw new Error(`the cross-reference at byte ${offset} is neither a table nor a cross-reference stream`);
      const length = integerOf(dict.entries.get('/Length'));
      if (length === undefined) throw new Error(`the cross-reference stream at byte ${offset} has no direct /Length`);
      const { data } = readStreamData(r, length, `the cross-reference stream at byte ${offset}`);
      r.expect('endobj');
      return { at: offset, kind: 'stream', entries: readXrefStream(dict, data, offset), trailer: dict, object: { num, gen } };
    });
    const nums = new Set<number>();
    const size = integerOf(section.trailer.entries.get('/Size'));
    if (size === undefined) throw new Error(`the trailer at byte ${offset} has no /Size`);
    for (const e of section.entries) {
      if (nums.has(e.num)) throw new Error(`the cross-reference section at byte ${offset} lists object ${e.num} twice`);
      nums.add(e.num);
      if (e.num >= size)
        throw new Error(`the cross-reference section at byte ${offset} lists object ${e.num}, not below its /Size ${size}`);
    }
    cache.set(offset, section);
    return section;
  }

  /** Object `num`, the `index`-th of object stream `stream`. */
  #inStream(num: number, stream: number, index: number): PdfObject {
    const key = `in ${stream} ${index} ${num}`;
    const known = this.#objects.get(key);
    if (known) return known;
    const os = this.objectStream(stream);
    const pair = os.pairs[index];
    if (!pair || pair[0] !== num)
      throw new Error(
        `the cross-reference reads object ${num} from object stream ${stream} at index ${index}, where ${pair ? `object ${pair[0]}` : 'nothing'} is`,
      );
    const r = new Reader(os.decoded, os.first + pair[1]);
    let value: PdfValue;
    try {
      value = r.value();
      r.skipSpace();
      if (r.peek('stream')) throw new Error('a stream inside an object stream');
    } catch (err) {
      throw new Error(`object ${num} in object stream ${stream}: ${(err as Error).message}`, { cause: err });
    }
    const o: PdfObject = { num, gen: 0, value, offset: undefined };
    this.#objects.set(key, o);
    return o;
  }

  /** Object stream `num` decoded (7.5.7): /Type /ObjStm, /N pairs of numbers and offsets before /First. */
  objectStream(num: number): ObjectStream {
    const known = this.#streams.get(num);
    if (known) return known;
    const e = this.#entries.get(num);
    if (e?.type !== 1 || e.gen !== 0) throw new Error(`object stream ${num} is not an object of the revision`);
    const os = readObjectStream(this.pdf, this.objectAt(e.offset, num, 0));
    this.#streams.set(num, os);
    return os;
  }
}

/** An object stream's header decoded, from its object. */
function readObjectStream(pdf: PdfBytes, o: PdfObject): ObjectStream {
  const what = `object stream ${o.num}`;
  const dict = o.value;
  const type = dict.kind === 'dict' ? dict.entries.get('/Type') : undefined;
  if (dict.kind !== 'dict' || !o.stream || type?.kind !== 'name' || type.text !== '/ObjStm')
    throw new Error(`object ${o.num} is not an object stream`);
  if (!o.stream.data) throw outsideHeld(pdf, what, o.stream.start);
  const n = integerOf(dict.entries.get('/N'));
  const first = integerOf(dict.entries.get('/First'));
  if (n === undefined || first === undefined) throw new Error(`${what} has no /N or /First`);
  const decoded = decodeStream(dict, o.stream.data, what);
  const r = new Reader(decoded.subarray(0, first), 0);
  const pairs: [number, number][] = [];
  const nums = new Set<number>();
  try {
    for (let i = 0; i < n; i++) {
      const num = r.integer(`${what}'s header`);
      const off = r.integer(`${what}'s header`);
      if (nums.has(num)) throw new Error(`it holds object ${num} twice`);
      nums.add(num);
      if (first + off >= decoded.length || (pairs.length > 0 && off <= pairs.at(-1)![1]))
        throw new Error(`object ${num}'s offset ${off} is out of order or range`);
      pairs.push([num, off]);
    }
    r.skipSpace();
    if (r.pos !== r.buf.length) throw new Error('its header holds more than /N pairs');
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
  }
  return { num: o.num, offset: o.offset!, pairs, first, decoded, dataStart: o.stream.start };
}

/** The references in a value (strings that only read like references do not count). */
export function refsIn(value: PdfValue): { num: number; gen: number }[] {
  if (value.kind === 'ref') return [value];
  if (value.kind === 'dict') return [...value.entries.values()].flatMap(refsIn);
  if (value.kind === 'array') return value.items.flatMap(refsIn);
  return [];
}

/** Binary search: the index of the last element of sorted `a` below `x`, or -1. */
function lastBelow(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * Holds the revision's bytes (every one before its end) to its cross-reference sections, and throws with the first
 * disagreement: an object header no section lists (unless it lies in the data of a stream a section lists), an
 * object number defined twice in one revision, a section entry with no such header where it points, an object
 * stream that holds objects no section reads from it, or one no section reads from at all. Returns the highest
 * object number the objects inside its object streams refer to (-1 when none).
 */
export function checkBody(rev: PdfRevision, marks: StructureMarks): { highestReference: number } {
  const pdf = rev.pdf;
  const limit = rev.end;
  if (marks.overflow) throw new Error(`the file has more than ${marks.offsets.length} object headers, more than a check reads`);
  // Every object any section lists (older ones too: pdf-lib, and a reader of an older revision, read those).
  const listed = new Map<number, { num: number; gen: number }>();
  const structure = new Set<number>();
  for (const s of rev.sections) {
    if (s.object) {
      structure.add(s.at);
      listed.set(s.at, s.object);
    }
    for (const e of s.entries) {
      if (e.type !== 1) continue;
      if (e.offset >= limit)
        throw new Error(`the cross-reference places object ${e.num} at byte ${e.offset}, past the end of its revision (byte ${limit})`);
      const other = listed.get(e.offset);
      if (other && (other.num !== e.num || other.gen !== e.gen))
        throw new Error(`two cross-reference sections place objects ${other.num} and ${e.num} at the same byte ${e.offset}`);
      listed.set(e.offset, { num: e.num, gen: e.gen });
    }
  }
  const headerAt = new Map<number, number>();
  for (let i = 0; i < marks.count && marks.offsets[i]! < limit; i++) headerAt.set(marks.offsets[i]!, i);
  for (const [offset, { num, gen }] of listed) {
    const i = headerAt.get(offset);
    if (i === undefined || marks.nums[i] !== num || marks.gens[i] !== gen) {
      const found = i === undefined ? 'no object header stands' : `the header of object ${marks.nums[i]} ${marks.gens[i]} stands`;
      throw new Error(`the cross-reference places object ${num} ${gen} at byte ${offset}, where ${found}`);
    }
  }
  const sorted = [...listed.keys()].sort((a, b) => a - b);
  // A revision's body: the bytes before its section, after the section before it.
  const bodies = rev.sections.map((s) => s.at).sort((a, b) => a - b);
  const bodyOf = (offset: number) => lastBelow(bodies, offset + 1);
  const definedIn = new Map<string, number>();
  for (const offset of sorted) {
    if (structure.has(offset)) continue;
    const { num } = listed.get(offset)!;
    const key = `${bodyOf(offset)} ${num}`;
    const other = definedIn.get(key);
    if (other !== undefined)
      throw new Error(`object ${num} is defined twice in one revision, at bytes ${other} and ${offset}: readers disagree which one counts`);
    definedIn.set(key, offset);
  }

  // Object streams some section reads from, each checked whole: every object in it is read from it by a section.
  const fromStreams = new Map<number, ObjectStream>();
  const reads = new Set<string>();
  const byNumber = rev.sections.map((s) => new Map(s.entries.map((e) => [e.num, e])));
  for (const [k, s] of rev.sections.entries()) {
    for (const e of s.entries) {
      if (e.type !== 2) continue;
      // The stream as the revision of this section has it: the newest type-1 entry for it, from this section back.
      const holder = byNumber
        .slice(k)
        .map((m) => m.get(e.stream))
        .find((x) => x !== undefined);
      if (holder?.type !== 1 || holder.gen !== 0)
        throw new Error(`the cross-reference reads object ${e.num} from object stream ${e.stream}, which is not an object there`);
      let os = fromStreams.get(holder.offset);
      if (!os) {
        const o = rev.objectAt(holder.offset, e.stream, 0);
        os = readObjectStream(pdf, o);
        fromStreams.set(holder.offset, os);
      }
      if (os.pairs[e.offset]?.[0] !== e.num)
        throw new Error(`the cross-reference reads object ${e.num} from object stream ${e.stream} at index ${e.offset}, where it is not`);
      reads.add(`${holder.offset} ${e.offset}`);
    }
  }
  let highestReference = -1;
  for (const os of fromStreams.values()) {
    for (const [i, [num, off]] of os.pairs.entries()) {
      if (!reads.has(`${os.offset} ${i}`))
        throw new Error(
          `object stream ${os.num} (at byte ${os.offset}) holds object ${num}, which no cross-reference section reads from it`,
        );
      const r = new Reader(os.decoded, os.first + off);
      let value: PdfValue;
      try {
        value = r.value();
      } catch (err) {
        throw new Error(`object ${num} in object stream ${os.num}: ${(err as Error).message}`, { cause: err });
      }
      for (const ref of refsIn(value)) highestReference = Math.max(highestReference, ref.num);
    }
  }

  /** Whether byte `at` lies in the data of the listed object before it; 'unknown' when that cannot be told here. */
  const inStreamData = (at: number): { container: number | undefined; inData: boolean | 'unknown' } => {
    const c = lastBelow(sorted, at);
    if (c < 0) return { container: undefined, inData: false };
    const offset = sorted[c]!;
    const { num, gen } = listed.get(offset)!;
    let o: PdfObject;
    try {
      o = rev.objectAt(offset, num, gen);
    } catch (err) {
      if (/lies outside/.test((err as Error).message)) return { container: offset, inData: 'unknown' };
      throw err;
    }
    if (!o.stream || at < o.stream.start || at >= o.stream.start + o.stream.length) return { container: offset, inData: false };
    return { container: offset, inData: o.stream.ended ? true : 'unknown' };
  };
  const cannotTell = (what: string, at: number, container: number) =>
    new Error(
      `${what} at byte ${at}, which no cross-reference section lists, may be the data of the stream at byte ${container} or not: ` +
        `a check of a file this large cannot tell, as the bytes that would tell lie outside ${pdf.held}`,
    );

  for (let i = 0; i < marks.count && marks.offsets[i]! < limit; i++) {
    const at = marks.offsets[i]!;
    if (listed.has(at)) continue;
    const num = marks.nums[i]!;
    const what = num < 0 ? 'an object header too long to read' : `the header of object ${num} ${marks.gens[i]}`;
    const { container, inData } = inStreamData(at);
    if (inData === true) continue;
    const twin = num < 0 ? undefined : definedIn.get(`${bodyOf(at)} ${num}`);
    if (twin !== undefined)
      throw new Error(
        `object ${num} is defined twice in one revision: at byte ${twin}, which its cross-reference names, and at byte ${at}, which readers ` +
          'that read the file in order (pdf-lib) or rebuild its table take instead',
      );
    if (inData === 'unknown') throw cannotTell(what, at, container!);
    throw new Error(
      `${what} stands at byte ${at}, outside every cross-reference section: an object a reader rebuilding the table would read`,
    );
  }
  const streamsAt = new Set(fromStreams.keys());
  for (const at of marks.objStms) {
    if (at >= limit) break;
    const { container, inData } = inStreamData(at);
    if (inData === true) continue;
    if (container !== undefined && streamsAt.has(container) && at < fromStreams.get(container)!.dataStart) continue;
    if (inData === 'unknown') throw cannotTell('an /ObjStm name', at, container!);
    throw new Error(
      `an object stream (its /ObjStm at byte ${at}) is one no cross-reference section reads from: the objects in it are outside every section`,
    );
  }
  return { highestReference };
}
