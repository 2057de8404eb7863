import { inflateSync } from 'node:zlib';
import { PDFArray, PDFDict, PDFDocument, PDFName, PDFRef, PDFStream, type PDFObject } from 'pdf-lib';
import { UNREADABLE_REFERENCE, type PdfBytes } from './pdf-bytes.js';
import { readIncrements, readObject, readStartxref, readXrefTable, type IncrementObject, type PdfValue } from './pdf-increments.js';

/** What the revisions after a seal add, when they add only what PAdES B-LT and B-LTA allow. */
export interface LongTermData {
  /** Document time-stamps (/Type /DocTimeStamp), oldest first. */
  documentTimestamps: { byteRange: [number, number, number, number]; token: Buffer }[];
  /** The latest /DSS's validation data, decoded. */
  dss: { certs: Buffer[]; ocsps: Buffer[]; crls: Buffer[] };
}

const DSS_KEYS = new Set(['/Type', '/Certs', '/OCSPs', '/CRLs', '/VRI']);
const DOC_TS_KEYS = new Set(['/Type', '/Filter', '/SubFilter', '/ByteRange', '/Contents', '/M', '/Name', '/Reason', '/Prop_Build']);
const WIDGET_KEYS = new Set(['/FT', '/T', '/V', '/Type', '/Subtype', '/F', '/P', '/Rect']);
const STREAM_KEYS = new Set(['/Length', '/Filter']);
const norm = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .replace(/ ?([[\]<>]) ?/g, '$1')
    .trim();
const name = (v: PdfValue | undefined) => (v?.kind === 'name' ? v.text : undefined);

/** What the checks need of the revision a seal covers: its catalog and form (as text), and which objects it holds. */
interface SealedRevision {
  root: number;
  rootGen: number;
  /** The trailer's /Info, as text ("n g R"), if it has one. */
  info: string | undefined;
  catalog: Map<string, string>;
  /** The form's object number and entries, when the catalog names one by reference. */
  acroForm: { num: number; gen: number; entries: Map<string, string> | undefined } | undefined;
  has(num: number, gen: number): boolean;
  /** One past the highest object number the sealed revision defines or lists. */
  size: number;
  /** The highest object number its parsed objects refer to (object streams included); -1 when not parsed. */
  referenced: number;
}

/**
 * Reads the revisions appended after a seal that ends at byte `sealEnd`:
 * they may only add validation data (/DSS, its streams) and document
 * time-stamps (with their invisible signature fields), and touch the catalog
 * and AcroForm only to point at them. Returns what they add, or throws with
 * the first change that is more than that.
 */
export async function readLongTermData(pdf: PdfBytes, sealEnd: number): Promise<LongTermData> {
  const rest = pdf.slice(sealEnd, pdf.length);
  if (!rest) throw new Error(`the updates after the seal lie outside ${pdf.held}, all a check of a file this large reads`);
  const sealedStartxref = pdf.lastIndexOf('startxref', sealEnd);
  const w = sealedStartxref === -1 ? undefined : pdf.windowAt(sealedStartxref);
  if (!w) throw new Error(`the sealed revision has no startxref in ${pdf.held}`);
  const increments = readIncrements(rest, 0, sealEnd, readStartxref(w.buf, sealedStartxref - w.start, w.start));
  const revision = pdf.whole ? await loadedRevision(pdf.whole.subarray(0, sealEnd)) : tableRevision(pdf, sealEnd);
  const root = revision.root;
  const acroFormNum = revision.acroForm?.num;
  const sealedCatalog = revision.catalog;
  const sealedAcroForm = revision.acroForm?.entries;
  // What an update adds is numbered past every object the sealed revision defines, lists or refers to: filling in
  // a number it leaves free or dangling would change what its pages show.
  // Held whole, the file is parsed by pdf-lib (object streams included); read in one pass, its references were
  // read as they streamed past.
  const scanned = pdf.whole ? -1 : pdf.maxReferenceBefore(sealEnd);
  if (scanned === UNREADABLE_REFERENCE)
    throw new Error('a reference in the sealed revision could not be read whole (its parts lie too far apart)');
  const firstFree = Math.max(revision.size, scanned + 1, revision.referenced + 1);

  const defined = new Map<number, IncrementObject>();
  const widgets: IncrementObject[] = [];
  const timestamps = new Map<number, IncrementObject>();
  let lastCatalog: IncrementObject | undefined;
  let highest = firstFree - 1;
  for (const increment of increments) {
    trailerProblem(increment.trailer, revision);
    for (const o of increment.objects) {
      const what = `object ${o.num}`;
      const dict = o.value.kind === 'dict' ? o.value.entries : undefined;
      highest = Math.max(highest, o.num);
      // A reader meeting a generation other than the one its table gives rebuilds the table: each keeps its own.
      const gen = o.num === root ? revision.rootGen : o.num === acroFormNum ? revision.acroForm!.gen : 0;
      if (o.gen !== gen) throw new Error(`an update after the seal defines ${what} with generation ${o.gen}, not ${gen}`);
      if (o.num === root) {
        if (!dict) throw new Error('an update after the seal replaces the catalog with a non-dictionary');
        for (const [k, v] of dict) {
          if (k === '/DSS' || k === '/AcroForm') {
            if (v.kind !== 'ref') throw new Error(`an update after the seal sets the catalog's ${k} to other than a reference`);
            if (k === '/AcroForm' && (acroFormNum === undefined || v.num !== acroFormNum)) {
              throw new Error('an update after the seal replaces the form');
            }
          } else if (sealedCatalog.get(k) !== norm(v.text)) throw new Error(`an update after the seal changes the catalog's ${k}`);
        }
        for (const k of sealedCatalog.keys()) if (!dict.has(k)) throw new Error(`an update after the seal removes the catalog's ${k}`);
        lastCatalog = o;
      } else if (o.num === acroFormNum && sealedAcroForm) {
        const fields = dict?.get('/Fields');
        if (!dict || fields?.kind !== 'array') throw new Error('an update after the seal rewrites the form');
        for (const [k, v] of dict) {
          if (k !== '/Fields' && sealedAcroForm.get(k) !== norm(v.text))
            throw new Error(`an update after the seal changes the form's ${k}`);
        }
        const sealedFields = sealedAcroForm.get('/Fields') ?? '[]';
        // Fields held in an object of their own could be changed without this object showing it.
        if (!sealedFields.startsWith('[')) throw new Error('an update after the seal rewrites a form whose fields are not a direct array');
        const before = /^\[(.*)\]$/.exec(sealedFields)?.[1] ?? '';
        const now = fields.items.map((i) => norm(i.text)).join(' ');
        if (!now.startsWith(before)) throw new Error("an update after the seal changes the form's existing fields");
        for (const added of fields.items.slice(before ? before.split(/ (?=\d+ \d+ R)/).length : 0)) {
          if (added.kind !== 'ref') throw new Error('an update after the seal adds a form field that is not a reference');
          widgets.push({ num: added.num, gen: added.gen, value: added });
        }
      } else if (revision.has(o.num, o.gen)) {
        throw new Error(`an update after the seal changes ${what}, which the seal covers`);
      } else if (o.num < firstFree) {
        throw new Error(`an update after the seal defines ${what}, a number the sealed revision refers to or keeps (below ${firstFree})`);
      } else if (o.stream) {
        if (!dict || [...dict.keys()].some((k) => !STREAM_KEYS.has(k)))
          throw new Error(`an update after the seal adds ${what}, a stream other than validation data`);
      } else if (name(dict?.get('/Type')) === '/DSS') {
        if ([...dict!.keys()].some((k) => !DSS_KEYS.has(k)))
          throw new Error(`an update after the seal adds ${what}, a /DSS with other keys`);
      } else if (name(dict?.get('/Type')) === '/DocTimeStamp') {
        if ([...dict!.keys()].some((k) => !DOC_TS_KEYS.has(k)) || name(dict!.get('/SubFilter')) !== '/ETSI.RFC3161') {
          throw new Error(`an update after the seal adds ${what}, a document time-stamp of another kind`);
        }
        timestamps.set(o.num, o);
      } else if (name(dict?.get('/FT')) === '/Sig') {
        if ([...dict!.keys()].some((k) => !WIDGET_KEYS.has(k)) || norm(dict!.get('/Rect')?.text ?? '') !== '[0 0 0 0]') {
          throw new Error(`an update after the seal adds ${what}, a signature field that shows`);
        }
      } else throw new Error(`an update after the seal adds ${what}, which is neither validation data nor a document time-stamp`);
      defined.set(o.num, o);
    }
    const size = increment.trailer.get('/Size');
    if (size?.kind !== 'number' || !/^\d+$/.test(size.text) || Number(size.text) <= highest) {
      throw new Error(`an update's trailer gives /Size ${size?.text ?? '(none)'}, not more than every object number (${highest})`);
    }
  }
  // Every reference an update writes names what it means: an object it defines, or one the seal covers, each with
  // its generation (a reference that names nothing, or the wrong generation, makes readers rebuild the table).
  for (const increment of increments) {
    for (const value of [...increment.objects.map((o) => o.value), ...increment.trailer.values()]) {
      for (const ref of refsIn(value)) {
        const mine = defined.get(ref.num);
        if (mine ? mine.gen !== ref.gen : !revision.has(ref.num, ref.gen)) {
          throw new Error(
            `an update after the seal refers to ${ref.num} ${ref.gen} R, which is neither its own object nor one the seal covers`,
          );
        }
      }
    }
  }
  // Every stream added is validation data: named by a /DSS added after the seal (its arrays or its /VRI).
  const named = new Set(
    [...defined.values()]
      .filter((o) => o.value.kind === 'dict' && name(o.value.entries.get('/Type')) === '/DSS')
      .flatMap((o) => refsIn(o.value).map((r) => r.num)),
  );
  for (const o of defined.values()) {
    if (o.stream && !named.has(o.num)) throw new Error(`an update after the seal adds object ${o.num}, a stream no /DSS names`);
  }
  // Every field the form gained is an invisible document time-stamp's.
  for (const w of widgets) {
    const field = defined.get(w.num);
    const v = field?.value.kind === 'dict' ? field.value.entries.get('/V') : undefined;
    if (
      name(field?.value.kind === 'dict' ? field.value.entries.get('/FT') : undefined) !== '/Sig' ||
      v?.kind !== 'ref' ||
      !timestamps.has(v.num)
    ) {
      throw new Error(`an update after the seal adds form field ${w.num}, which is not a document time-stamp`);
    }
  }

  const documentTimestamps = [...timestamps.values()].map((t) => {
    const d = (t.value as Extract<PdfValue, { kind: 'dict' }>).entries;
    const range = d.get('/ByteRange');
    const nums = range?.kind === 'array' ? range.items.map((i) => Number(i.text)) : [];
    const contents = d.get('/Contents')?.text ?? '';
    if (nums.length !== 4 || nums.some((n) => !Number.isInteger(n)) || !/^<[0-9a-fA-F\s]*>$/.test(contents)) {
      throw new Error('a document time-stamp has no readable /ByteRange or /Contents');
    }
    return { byteRange: nums as [number, number, number, number], token: Buffer.from(contents.slice(1, -1).replace(/\s+/g, ''), 'hex') };
  });
  return { documentTimestamps: documentTimestamps.sort((a, b) => a.byteRange[2] - b.byteRange[2]), dss: dssOf(lastCatalog, defined) };
}

/** The sealed revision as pdf-lib reads it, from the bytes the seal covers. */
async function loadedRevision(sealedBytes: Buffer): Promise<SealedRevision> {
  const sealed = await PDFDocument.load(sealedBytes, { updateMetadata: false, throwOnInvalidObject: true });
  const root = sealed.context.trailerInfo.Root;
  if (!(root instanceof PDFRef)) throw new Error('the sealed revision has no catalog');
  const textOf = (d: PDFDict) => new Map([...d.entries()].map(([k, v]) => [k.toString(), norm(v.toString())]));
  const acroFormRef = sealed.catalog.get(PDFName.of('AcroForm'));
  const acroForm = acroFormRef instanceof PDFRef ? sealed.context.lookup(acroFormRef, PDFDict) : undefined;
  const info = sealed.context.trailerInfo.Info;
  return {
    root: root.objectNumber,
    rootGen: root.generationNumber,
    info: info instanceof PDFRef ? `${info.objectNumber} ${info.generationNumber} R` : undefined,
    catalog: textOf(sealed.catalog),
    acroForm:
      acroFormRef instanceof PDFRef
        ? { num: acroFormRef.objectNumber, gen: acroFormRef.generationNumber, entries: acroForm ? textOf(acroForm) : undefined }
        : undefined,
    has: (num, gen) => sealed.context.lookup(PDFRef.of(num, gen)) !== undefined,
    size: sealed.context.largestObjectNumber + 1,
    referenced: highestReference(sealed),
  };
}

/**
 * The sealed revision of a file too large to hold, from its cross-reference tables (newest first, following
 * /Prev) and the catalog and form they point at, each of which must lie in the bytes held. A cross-reference
 * stream, or a part outside what is held, is refused with its reason: the check then fails, never passes.
 */
function tableRevision(pdf: PdfBytes, sealEnd: number): SealedRevision {
  const outside = (what: string, at: number) =>
    new Error(`the sealed revision's ${what} at byte ${at} lies outside ${pdf.held}, all a check of a file this large reads`);
  const window = (what: string, at: number) => {
    const w = pdf.windowAt(at);
    if (!w) throw outside(what, at);
    return w;
  };
  const startxref = pdf.lastIndexOf('startxref', sealEnd);
  if (startxref === -1) throw new Error(`the sealed revision has no startxref in ${pdf.held}`);
  const w = window('startxref', startxref);
  let offset: number | undefined = readStartxref(w.buf, startxref - w.start, w.start);
  const objects = new Map<number, { gen: number; offset: number; inUse: boolean }>();
  let trailer: Map<string, PdfValue> | undefined;
  const read = new Set<number>();
  while (offset !== undefined) {
    if (read.has(offset)) throw new Error(`the sealed revision's cross-reference tables loop at byte ${offset}`);
    read.add(offset);
    const x = window('cross-reference table', offset);
    if (!x.buf.subarray(offset - x.start, offset - x.start + 4).equals(XREF)) {
      throw new Error(
        `the sealed revision's cross-reference at byte ${offset} is not a table (a cross-reference stream?), which a check of a file this large does not read`,
      );
    }
    const table = readXrefTable(x.buf, offset - x.start, x.start);
    // A hybrid file lists some objects only in a cross-reference stream, which this reader would not see.
    if (table.trailer.has('/XRefStm')) {
      throw new Error(
        `the sealed revision's trailer at byte ${offset} names a cross-reference stream (/XRefStm), which a check of a file this large does not read`,
      );
    }
    for (const e of table.entries) if (!objects.has(e.num)) objects.set(e.num, e);
    trailer ??= table.trailer;
    const prev = table.trailer.get('/Prev');
    if (prev && (prev.kind !== 'number' || !/^\d+$/.test(prev.text))) {
      throw new Error(`the sealed revision's trailer names a /Prev that is not a byte offset (${prev.text})`);
    }
    offset = prev ? Number(prev.text) : undefined;
  }
  const dict = (
    ref: PdfValue | undefined,
    what: string,
  ): { num: number; gen: number; entries: Map<string, string>; values: Map<string, PdfValue> } => {
    const e = ref?.kind === 'ref' ? objects.get(ref.num) : undefined;
    if (!e?.inUse || ref?.kind !== 'ref' || e.gen !== ref.gen)
      throw new Error(`the sealed revision's ${what} is not in its cross-reference`);
    const o = window(what, e.offset);
    const found = readObject(o.buf, e.offset - o.start, o.start);
    if (found.num !== ref.num || found.gen !== ref.gen || found.value.kind !== 'dict')
      throw new Error(`the sealed revision's ${what} at byte ${e.offset} is not a dictionary`);
    const values = found.value.entries;
    return { num: ref.num, gen: ref.gen, entries: new Map([...values].map(([k, v]) => [k, norm(v.text)])), values };
  };
  const root = trailer!.get('/Root');
  const catalog = dict(root, 'catalog');
  const formRef = catalog.values.get('/AcroForm');
  const info = trailer!.get('/Info');
  if (info && info.kind !== 'ref') throw new Error("the sealed revision's /Info is not a reference");
  return {
    root: catalog.num,
    rootGen: catalog.gen,
    info: info ? norm(info.text) : undefined,
    catalog: catalog.entries,
    acroForm: formRef?.kind === 'ref' ? dict(formRef, 'form') : undefined,
    has: (num, gen) => objects.get(num)?.inUse === true && objects.get(num)!.gen === gen,
    size: [...objects.keys()].reduce((most, n) => Math.max(most, n + 1), sizeOf(trailer!.get('/Size'))),
    referenced: -1,
  };
}

const XREF = Buffer.from('xref');

/** The highest object number any object pdf-lib parsed refers to, however the reference was written. */
function highestReference(doc: PDFDocument): number {
  let highest = -1;
  const visit = (o: PDFObject | undefined, depth: number): void => {
    if (!o) return;
    // Deeper than any real file: refused rather than a reference left unseen.
    if (depth > 64) throw new Error('the sealed revision nests values more than 64 deep');
    if (o instanceof PDFRef) highest = Math.max(highest, o.objectNumber);
    else if (o instanceof PDFDict) for (const [, v] of o.entries()) visit(v, depth + 1);
    else if (o instanceof PDFArray) for (const v of o.asArray()) visit(v, depth + 1);
    else if (o instanceof PDFStream) visit(o.dict, depth + 1);
  };
  for (const [, o] of doc.context.enumerateIndirectObjects()) visit(o, 0);
  for (const o of Object.values(doc.context.trailerInfo)) visit(o, 0);
  return highest;
}

/** The references in a parsed value (strings that only read like references do not count). */
function refsIn(value: PdfValue): { num: number; gen: number }[] {
  if (value.kind === 'ref') return [value];
  if (value.kind === 'dict') return [...value.entries.values()].flatMap(refsIn);
  if (value.kind === 'array') return value.items.flatMap(refsIn);
  return [];
}

/** Why an update's trailer is more than a revision's bookkeeping: another catalog, other document information. */
function trailerProblem(trailer: Map<string, PdfValue>, revision: SealedRevision): void {
  const root = trailer.get('/Root');
  if (root?.kind !== 'ref' || root.num !== revision.root || root.gen !== revision.rootGen) {
    throw new Error('an update after the seal replaces the catalog');
  }
  const info = trailer.get('/Info');
  // Left out, a reader shows none: no claim is added. Given, it must be the sealed one.
  if (info && (info.kind !== 'ref' || norm(info.text) !== revision.info)) {
    throw new Error("an update after the seal changes the document's information (/Info)");
  }
  const id = trailer.get('/ID');
  if (id && (id.kind !== 'array' || id.items.length !== 2 || id.items.some((i) => i.kind !== 'string'))) {
    throw new Error('an update after the seal gives an /ID that is not two strings');
  }
}

/** A trailer's /Size, which every trailer must give. */
function sizeOf(value: PdfValue | undefined): number {
  if (value?.kind !== 'number' || !/^\d+$/.test(value.text)) throw new Error("the sealed revision's trailer has no /Size");
  return Number(value.text);
}

/** The validation data of the catalog's latest /DSS: each stream decoded. */
function dssOf(catalog: IncrementObject | undefined, defined: Map<number, IncrementObject>): LongTermData['dss'] {
  const empty = { certs: [], ocsps: [], crls: [] };
  const ref = catalog?.value.kind === 'dict' ? catalog.value.entries.get('/DSS') : undefined;
  const dss = ref?.kind === 'ref' ? defined.get(ref.num) : undefined;
  if (!dss || dss.value.kind !== 'dict') return empty;
  const streams = (key: string): Buffer[] => {
    const list = (dss.value as Extract<PdfValue, { kind: 'dict' }>).entries.get(key);
    if (!list || list.kind !== 'array') return [];
    return list.items.map((item) => {
      const o = item.kind === 'ref' ? defined.get(item.num) : undefined;
      if (!o?.stream || o.value.kind !== 'dict')
        throw new Error(`the /DSS names ${item.text} in ${key}, which is not a stream added after the seal`);
      const filter = name(o.value.entries.get('/Filter'));
      if (filter === undefined) return Buffer.from(o.stream);
      if (filter === '/FlateDecode') {
        try {
          return inflateSync(o.stream);
        } catch (err) {
          throw new Error(`a /DSS stream (object ${o.num}) does not decode: ${(err as Error).message}`, { cause: err });
        }
      }
      throw new Error(`a /DSS stream is encoded with ${filter}`);
    });
  };
  return { certs: streams('/Certs'), ocsps: streams('/OCSPs'), crls: streams('/CRLs') };
}
