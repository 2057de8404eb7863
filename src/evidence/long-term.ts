import { inflateSync } from 'node:zlib';
import { PDFDict, PDFDocument, PDFName, PDFRef } from 'pdf-lib';
import { readIncrements, type IncrementObject, type PdfValue } from './pdf-increments.js';

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

/**
 * Reads the revisions appended after a seal that ends at byte `sealEnd`:
 * they may only add validation data (/DSS, its streams) and document
 * time-stamps (with their invisible signature fields), and touch the catalog
 * and AcroForm only to point at them. Returns what they add, or throws with
 * the first change that is more than that.
 */
export async function readLongTermData(pdf: Buffer, sealEnd: number): Promise<LongTermData> {
  const increments = readIncrements(pdf, sealEnd);
  const sealed = await PDFDocument.load(pdf.subarray(0, sealEnd), { updateMetadata: false, throwOnInvalidObject: true });
  const root = sealed.context.trailerInfo.Root;
  if (!(root instanceof PDFRef)) throw new Error('the sealed revision has no catalog');
  const catalog = sealed.catalog;
  const acroFormRef = catalog.get(PDFName.of('AcroForm'));
  const acroForm = acroFormRef instanceof PDFRef ? sealed.context.lookup(acroFormRef, PDFDict) : undefined;
  const textOf = (d: PDFDict) => new Map([...d.entries()].map(([k, v]) => [k.toString(), norm(v.toString())]));
  const sealedCatalog = textOf(catalog);
  const sealedAcroForm = acroForm ? textOf(acroForm) : undefined;

  const defined = new Map<number, IncrementObject>();
  const widgets: IncrementObject[] = [];
  const timestamps = new Map<number, IncrementObject>();
  let lastCatalog: IncrementObject | undefined;
  for (const increment of increments) {
    const trailerRoot = increment.trailer.get('/Root');
    if (trailerRoot?.kind !== 'ref' || trailerRoot.num !== root.objectNumber)
      throw new Error('an update after the seal replaces the catalog');
    if (increment.trailer.has('/Encrypt')) throw new Error('an update after the seal encrypts the document');
    for (const o of increment.objects) {
      const what = `object ${o.num}`;
      const dict = o.value.kind === 'dict' ? o.value.entries : undefined;
      if (o.num === root.objectNumber) {
        if (!dict) throw new Error('an update after the seal replaces the catalog with a non-dictionary');
        for (const [k, v] of dict) {
          if (k === '/DSS' || k === '/AcroForm') {
            if (v.kind !== 'ref') throw new Error(`an update after the seal sets the catalog's ${k} to other than a reference`);
            if (k === '/AcroForm' && acroFormRef instanceof PDFRef && v.num !== acroFormRef.objectNumber) {
              throw new Error('an update after the seal replaces the form');
            }
          } else if (sealedCatalog.get(k) !== norm(v.text)) throw new Error(`an update after the seal changes the catalog's ${k}`);
        }
        for (const k of sealedCatalog.keys()) if (!dict.has(k)) throw new Error(`an update after the seal removes the catalog's ${k}`);
        lastCatalog = o;
      } else if (acroFormRef instanceof PDFRef && o.num === acroFormRef.objectNumber && sealedAcroForm) {
        const fields = dict?.get('/Fields');
        if (!dict || fields?.kind !== 'array') throw new Error('an update after the seal rewrites the form');
        for (const [k, v] of dict) {
          if (k !== '/Fields' && sealedAcroForm.get(k) !== norm(v.text))
            throw new Error(`an update after the seal changes the form's ${k}`);
        }
        const before = /^\[(.*)\]$/.exec(sealedAcroForm.get('/Fields') ?? '[]')?.[1] ?? '';
        const now = fields.items.map((i) => norm(i.text)).join(' ');
        if (!now.startsWith(before)) throw new Error("an update after the seal changes the form's existing fields");
        for (const added of fields.items.slice(before ? before.split(/ (?=\d+ \d+ R)/).length : 0)) {
          if (added.kind !== 'ref') throw new Error('an update after the seal adds a form field that is not a reference');
          widgets.push({ num: added.num, gen: added.gen, value: added });
        }
      } else if (sealed.context.lookup(PDFRef.of(o.num, o.gen)) !== undefined) {
        throw new Error(`an update after the seal changes ${what}, which the seal covers`);
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
