import { UNREADABLE_REFERENCE, type PdfBytes } from './pdf-bytes.js';
import {
  decodeStream,
  describe,
  integerOf,
  readIncrements,
  sameValue,
  type IncrementObject,
  type PdfDict,
  type PdfValue,
} from './pdf-increments.js';
import { checkBody, endsRevision, PdfRevision, readRevisionEnd, refsIn } from './pdf-xref.js';

/**
 * One signature of a PDF, read from its signature dictionary as a reader reads it (through the cross-reference of
 * the revision it is in): what a validator needs to check it.
 */
export interface PdfSignature {
  /** The seal (an approval or certification signature, /SubFilter /ETSI.CAdES.detached), or a document time-stamp. */
  kind: 'seal' | 'document-timestamp';
  /** The signature dictionary's object. */
  object: { num: number; gen: number };
  /** /ByteRange: [0, b, c, d], the bytes [0, b) and [c, c + d) signed; [b, c) is exactly the /Contents string. */
  byteRange: [number, number, number, number];
  /** The signature value: /Contents decoded (a CMS SignedData; for a document time-stamp, an RFC 3161 token). */
  contents: Buffer;
  /** /Filter and /SubFilter, as names ("/Adobe.PPKLite", "/ETSI.CAdES.detached"); undefined when absent. */
  filter: string | undefined;
  subFilter: string | undefined;
  /** /M as written (a PDF date, "D:20260101120000Z"), when given: the signer's claim, not a proof. */
  signingTime: string | undefined;
  /** Where the revision it signs ends (c + d): just past that revision's %%EOF and its end of line. */
  revisionEnd: number;
  /** Its DocMDP permissions (1, 2 or 3: ISO 32000 12.8.2.2) when its /Reference certifies the document. */
  docMdp: 1 | 2 | 3 | undefined;
}

/** The certification (DocMDP) of the document, if it is certified. */
export interface Certification {
  /** The certifying signature's dictionary. */
  signature: { num: number; gen: number };
  /** 1: no change; 2: form filling and signing; 3: also annotations. */
  permissions: 1 | 2 | 3;
  /** Whether the seal is the certifying signature. */
  bySeal: boolean;
}

/** What the revisions after a seal add, when they add only what PAdES B-LT and B-LTA allow. */
export interface LongTermData {
  /** Document time-stamps (/Type /DocTimeStamp), oldest first; `token` is their /Contents. */
  documentTimestamps: (PdfSignature & { token: Buffer })[];
  /** The latest /DSS's validation data, decoded. */
  dss: { certs: Buffer[]; ocsps: Buffer[]; crls: Buffer[] };
  /** Every signature of the file: the seal, then the document time-stamps, oldest first. */
  signatures: PdfSignature[];
  /** The document's certification, when the sealed revision has one. */
  certification: Certification | null;
}

/** The revision a seal covers is not read alike by every reader, or is not what a seal may cover. */
export class SealedRevisionError extends Error {}

const DSS_KEYS = new Set(['/Type', '/Certs', '/OCSPs', '/CRLs', '/VRI']);
const VRI_KEYS = new Set(['/Type', '/Cert', '/OCSP', '/CRL', '/TU', '/TS']);
const DOC_TS_KEYS = new Set([
  '/Type',
  '/Filter',
  '/SubFilter',
  '/ByteRange',
  '/Contents',
  '/M',
  '/Name',
  '/Reason',
  '/Location',
  '/ContactInfo',
  '/Prop_Build',
]);
const WIDGET_KEYS = new Set(['/FT', '/T', '/V', '/Type', '/Subtype', '/F', '/P', '/Rect']);
const STREAM_KEYS = new Set(['/Length', '/Filter']);
/** The /SigFlags bits an update may set (SignaturesExist, AppendOnly: ISO 32000 12.7.3): none may be cleared. */
const SIG_FLAGS = 3;
/** How many revisions, newest first, are looked at for the seal. */
const MAX_REVISIONS = 256;

const nameOf = (v: PdfValue | undefined) => (v?.kind === 'name' ? v.text : undefined);
const isNull = (v: PdfValue | undefined) => v?.kind === 'keyword' && v.text === 'null';

/** Each revision's end, newest first: the "startxref N %%EOF" that ends it. */
function revisionEnds(pdf: PdfBytes): { at: number; startxref: number; eofEnd: number }[] {
  const ends: { at: number; startxref: number; eofEnd: number }[] = [];
  for (let before = pdf.length, n = 0; n < MAX_REVISIONS; n++) {
    const at = pdf.lastIndexOf('startxref', before);
    if (at === -1) break;
    before = at;
    try {
      ends.push({ at, ...readRevisionEnd(pdf, at) });
    } catch {
      // Text that only reads like a startxref (in a stream's data): not a revision's end.
    }
  }
  return ends;
}

/**
 * Finds the seal: the newest signature that is not a document time-stamp, in the signature fields of the newest
 * revision that can be read and has one, read again from the revision it ends (so nothing appended after it speaks
 * for it). Returns why not when there is none or it cannot be read.
 */
export function findSeal(pdf: PdfBytes): { seal: PdfSignature } | { problem: string } {
  const ends = revisionEnds(pdf);
  let unreadable: string | undefined;
  for (const end of ends) {
    let signatures: PdfSignature[];
    try {
      signatures = signaturesOf(new PdfRevision(pdf, end.startxref, end.eofEnd));
    } catch (err) {
      unreadable ??= (err as Error).message;
      continue;
    }
    const seals = signatures.filter((s) => s.kind === 'seal');
    if (seals.length === 0) continue;
    const newest = seals.reduce((a, b) => (b.revisionEnd > a.revisionEnd ? b : a));
    if (seals.some((s) => s !== newest && s.revisionEnd === newest.revisionEnd))
      return { problem: `two signatures end at byte ${newest.revisionEnd}: which one seals the document cannot be told` };
    const sealed = ends.find((e) => endsRevision(pdf, e.eofEnd, newest.revisionEnd));
    if (!sealed) return { problem: `the seal's /ByteRange ends at byte ${newest.revisionEnd}, which is not the end of a revision` };
    try {
      return { seal: readSignature(new PdfRevision(pdf, sealed.startxref, newest.revisionEnd), newest.object) };
    } catch (err) {
      return { problem: `the seal cannot be read from the revision it signs: ${(err as Error).message}` };
    }
  }
  // A revision that cannot be read may hold the seal: its reason, not "not signed".
  if (unreadable !== undefined) return { problem: `no signature can be read: ${unreadable}` };
  return {
    problem: pdf.partial ? `no signature is found in ${pdf.held}, all a check of a file this large reads` : 'the PDF is not signed',
  };
}

/** The signatures a revision's form holds: every signature field's /V. */
function signaturesOf(rev: PdfRevision): PdfSignature[] {
  const root = rev.trailer.entries.get('/Root');
  const catalog = rev.resolve(root);
  if (root?.kind !== 'ref' || catalog?.kind !== 'dict') throw new Error("the trailer's /Root names no catalog");
  const form = rev.resolve(catalog.entries.get('/AcroForm'));
  if (form === undefined) return [];
  if (form.kind !== 'dict') throw new Error("the catalog's /AcroForm is not a dictionary");
  const fields = rev.resolve(form.entries.get('/Fields'));
  if (fields === undefined) return [];
  if (fields.kind !== 'array') throw new Error("the form's /Fields is not an array");
  const out: PdfSignature[] = [];
  const seen = new Set<string>();
  const walk = (item: PdfValue, inherited: string | undefined, depth: number) => {
    if (item.kind !== 'ref') throw new Error('a form field is not an indirect object');
    const key = `${item.num} ${item.gen}`;
    if (seen.has(key)) throw new Error(`form field ${item.num} appears twice in the form`);
    if (depth > 16 || seen.size > 10_000) throw new Error("the form's fields nest too deep or are too many");
    seen.add(key);
    const field = rev.resolve(item);
    if (field?.kind !== 'dict') throw new Error(`form field ${item.num} is not a dictionary`);
    const type = nameOf(field.entries.get('/FT')) ?? inherited;
    const v = field.entries.get('/V');
    if (type === '/Sig' && v !== undefined && !isNull(v)) {
      if (v.kind !== 'ref') throw new Error(`signature field ${item.num}'s /V is not an indirect signature dictionary`);
      if (out.some((s) => s.object.num === v.num)) throw new Error(`two signature fields name signature dictionary ${v.num}`);
      out.push(readSignature(rev, v));
    }
    const kids = rev.resolve(field.entries.get('/Kids'));
    if (kids?.kind === 'array') for (const kid of kids.items) walk(kid, type, depth + 1);
  };
  for (const f of fields.items) walk(f, undefined, 0);
  return out;
}

/** The signature dictionary `ref` names, as the revision has it. */
function readSignature(rev: PdfRevision, ref: { num: number; gen: number }): PdfSignature {
  const what = `the signature dictionary (object ${ref.num})`;
  const o = rev.object(ref.num, ref.gen);
  if (!o) throw new Error(`${what} is not in the cross-reference`);
  if (o.offset === undefined) throw new Error(`${what} lies in an object stream, where no /ByteRange can leave out its /Contents`);
  if (o.value.kind !== 'dict') throw new Error(`${what} is not a dictionary`);
  const sig = signatureFields(o.value, ref, what);
  return { ...sig, docMdp: docMdpOf(rev, o.value, what) };
}

/** A signature dictionary's fields (direct values: a /ByteRange and /Contents by reference are not read). */
function signatureFields(d: PdfDict, ref: { num: number; gen: number }, what: string): Omit<PdfSignature, 'docMdp'> {
  const type = nameOf(d.entries.get('/Type'));
  if (d.entries.has('/Type') && type !== '/Sig' && type !== '/DocTimeStamp')
    throw new Error(`${what} has /Type ${describe(d.entries.get('/Type'))}`);
  const subFilter = nameOf(d.entries.get('/SubFilter'));
  const range = d.entries.get('/ByteRange');
  const nums = range?.kind === 'array' ? range.items.map(integerOf) : [];
  if (nums.length !== 4 || nums.some((n) => n === undefined)) throw new Error(`${what} has no /ByteRange of four integers`);
  const [a, b, c, l] = nums as [number, number, number, number];
  const contents = d.entries.get('/Contents');
  if (contents?.kind !== 'string' || !contents.hex) throw new Error(`${what}'s /Contents is not a hexadecimal string`);
  // The signed bytes are the whole revision but the signature value: [b, c) is exactly the /Contents string.
  if (a !== 0 || contents.start !== b || contents.end !== c)
    throw new Error(`the signature's /ByteRange [${a} ${b} ${c} ${l}] does not frame its /Contents`);
  const m = d.entries.get('/M');
  return {
    kind: type === '/DocTimeStamp' || subFilter === '/ETSI.RFC3161' ? 'document-timestamp' : 'seal',
    object: { num: ref.num, gen: ref.gen },
    byteRange: [a, b, c, l],
    contents: contents.bytes,
    filter: nameOf(d.entries.get('/Filter')),
    subFilter,
    signingTime: m?.kind === 'string' ? m.bytes.toString('latin1') : undefined,
    revisionEnd: c + l,
  };
}

/** The DocMDP permissions a signature dictionary's /Reference gives (ISO 32000 12.8.2.2; /P 2 when not given). */
function docMdpOf(rev: PdfRevision, d: PdfDict, what: string): 1 | 2 | 3 | undefined {
  const refs = rev.resolve(d.entries.get('/Reference'));
  if (refs === undefined) return undefined;
  if (refs.kind !== 'array') throw new Error(`${what}'s /Reference is not an array`);
  let permissions: 1 | 2 | 3 | undefined;
  for (const item of refs.items) {
    const sigRef = rev.resolve(item);
    if (sigRef?.kind !== 'dict') throw new Error(`${what}'s /Reference holds other than signature reference dictionaries`);
    if (nameOf(sigRef.entries.get('/TransformMethod')) !== '/DocMDP') continue;
    const params = rev.resolve(sigRef.entries.get('/TransformParams'));
    const raw = params?.kind === 'dict' ? params.entries.get('/P') : undefined;
    const p = raw === undefined ? 2 : integerOf(raw);
    if (p !== 1 && p !== 2 && p !== 3) throw new Error(`${what}'s DocMDP permissions (/P ${describe(raw)}) are not 1, 2 or 3`);
    if (permissions !== undefined) throw new Error(`${what} names DocMDP twice`);
    permissions = p;
  }
  return permissions;
}

/** What the checks of the updates need of the revision a seal covers. */
interface SealedRevision {
  root: number;
  rootGen: number;
  info: PdfValue | undefined;
  catalog: PdfDict;
  /** The form: an object of its own, or a dictionary inside the catalog. */
  form: { num: number; gen: number; dict: PdfDict } | { num: undefined; dict: PdfDict } | undefined;
  has(num: number, gen: number): boolean;
  /** The revision's start: its startxref's offset. */
  startxref: number;
  /** An update's objects are numbered from here on: past every number the sealed revision defines, lists or refers to. */
  firstFree: number;
  certification: Certification | null;
}

/**
 * The revision the seal ends, read by its cross-reference and held strictly to it (`checkBody`), with what a seal
 * may be: /Filter /Adobe.PPKLite, /SubFilter /ETSI.CAdES.detached, and no certification that forbids it.
 */
function sealedRevision(pdf: PdfBytes, seal: PdfSignature): SealedRevision {
  const sealEnd = seal.revisionEnd;
  const at = pdf.lastIndexOf('startxref', sealEnd);
  if (at === -1) throw new Error(`no startxref ends the sealed revision in ${pdf.held}`);
  const { startxref, eofEnd } = readRevisionEnd(pdf, at);
  if (!endsRevision(pdf, eofEnd, sealEnd))
    throw new Error(`the seal's /ByteRange ends at byte ${sealEnd}, not where its revision ends (${eofEnd})`);
  const rev = new PdfRevision(pdf, startxref, sealEnd);
  const { highestReference } = checkBody(rev, pdf.marks());
  if (seal.filter !== '/Adobe.PPKLite') throw new Error(`the seal's /Filter is ${seal.filter ?? '(none)'}, not /Adobe.PPKLite`);
  // PAdES baseline (ETSI EN 319 142-1 6.2.1): a CAdES signature; /adbe.pkcs7.detached is the older PKCS #7 profile.
  if (seal.subFilter !== '/ETSI.CAdES.detached')
    throw new Error(`the seal's /SubFilter is ${seal.subFilter ?? '(none)'}: a PAdES baseline seal is /ETSI.CAdES.detached`);
  const rootRef = rev.trailer.entries.get('/Root');
  const catalog = rev.resolve(rootRef);
  if (rootRef?.kind !== 'ref' || catalog?.kind !== 'dict') throw new Error("the trailer's /Root names no catalog");
  const info = rev.trailer.entries.get('/Info');
  if (info && info.kind !== 'ref') throw new Error("the trailer's /Info is not a reference");
  const formValue = catalog.entries.get('/AcroForm');
  const formDict = rev.resolve(formValue);
  if (formDict !== undefined && formDict.kind !== 'dict') throw new Error("the catalog's /AcroForm is not a dictionary");
  const form = formDict
    ? formValue?.kind === 'ref'
      ? { num: formValue.num, gen: formValue.gen, dict: formDict }
      : { num: undefined, dict: formDict }
    : undefined;

  // The certification: the seal's own DocMDP, or the one the catalog's /Perms names.
  let certification: Certification | null = seal.docMdp ? { signature: seal.object, permissions: seal.docMdp, bySeal: true } : null;
  const perms = rev.resolve(catalog.entries.get('/Perms'));
  const docMdp = perms?.kind === 'dict' ? perms.entries.get('/DocMDP') : undefined;
  if (docMdp !== undefined) {
    if (docMdp.kind !== 'ref') throw new Error("the catalog's /Perms /DocMDP is not a reference to a signature dictionary");
    if (docMdp.num === seal.object.num && docMdp.gen === seal.object.gen) {
      certification = { signature: seal.object, permissions: seal.docMdp ?? 2, bySeal: true };
    } else {
      const certifier = readSignature(rev, docMdp);
      certification = { signature: certifier.object, permissions: certifier.docMdp ?? 2, bySeal: false };
      // A certification with P 1 allows no change: the seal's revision, after it, is one (ISO 32000 12.8.2.2.2).
      if (certification.permissions === 1 && certifier.revisionEnd < sealEnd)
        throw new Error(
          `the document was certified allowing no change (DocMDP /P 1, signature object ${docMdp.num}), and the seal's revision changes it`,
        );
    }
  }

  let size = integerOf(rev.trailer.entries.get('/Size')) ?? 0;
  for (const s of rev.sections) for (const e of s.entries) size = Math.max(size, e.num + 1);
  // References the revision's bytes write however they are written (read as they streamed past, for a large file),
  // and those inside its object streams.
  const scanned = pdf.maxReferenceBefore(sealEnd);
  if (scanned === UNREADABLE_REFERENCE) throw new Error('a reference in it could not be read whole (its parts lie too far apart)');
  return {
    root: rootRef.num,
    rootGen: rootRef.gen,
    info,
    catalog,
    form,
    has: (num, gen) => {
      const e = rev.entry(num);
      return e !== undefined && e.type !== 0 && e.gen === gen;
    },
    startxref,
    firstFree: Math.max(size, scanned + 1, highestReference + 1),
    certification,
  };
}

/**
 * Reads the PDF around its seal strictly: the revision the seal ends, by its cross-reference (the same algorithm
 * for a file held whole and for one read in one pass), and the revisions appended after it, which may only add
 * validation data (/DSS, its streams, VRI dictionaries) and document time-stamps (with their invisible signature
 * fields), and touch the catalog and form only to point at them. Every key of the sealed catalog and form stays, its
 * value the same as parsed. Returns what they add and every signature, or throws with the first problem: a
 * `SealedRevisionError` for the sealed revision, an Error for what follows it.
 *
 * DocMDP: a certification is honoured, and with /P 1 (no change) the updates may still add only a /DSS and document
 * time-stamps, which ISO 32000-2 and PAdES let follow any certification (they change nothing a reader shows).
 */
export async function readLongTermData(pdf: PdfBytes, seal: PdfSignature): Promise<LongTermData> {
  let sealed: SealedRevision;
  try {
    sealed = sealedRevision(pdf, seal);
  } catch (err) {
    throw new SealedRevisionError(`the sealed revision is refused: ${(err as Error).message}`, { cause: err });
  }
  const sealEnd = seal.revisionEnd;
  const empty = { certs: [], ocsps: [], crls: [] };
  if (sealEnd === pdf.length) return { documentTimestamps: [], dss: empty, signatures: [seal], certification: sealed.certification };
  const rest = pdf.slice(sealEnd, pdf.length);
  if (!rest) throw new Error(`the updates after the seal lie outside ${pdf.held}, all a check of a file this large reads`);
  const increments = readIncrements(rest, 0, sealEnd, sealed.startxref);
  const { root, firstFree, catalog: sealedCatalog } = sealed;

  /** Every object added after the seal, and the update it is in. */
  const defined = new Map<number, IncrementObject & { update: number }>();
  const catalogs: PdfDict[] = [];
  /** The form as the sealed revision has it; for a form added after the seal, nothing. */
  const formBase = sealed.form?.dict;
  let formNum = sealed.form?.num;
  let formGen = sealed.form?.num === undefined ? 0 : sealed.form.gen;
  const sealedFields = formBase?.entries.get('/Fields');
  if (sealedFields !== undefined && sealedFields.kind !== 'array' && sealedFields.kind !== 'ref')
    throw new Error("the sealed form's /Fields is not an array");
  let fields: PdfValue[] = sealedFields?.kind === 'array' ? sealedFields.items : [];
  const added: PdfValue[] = [];
  let highest = firstFree - 1;

  /** A rewritten form: every sealed key as it was, /Fields appended to, /SigFlags raised. */
  const checkForm = (value: PdfValue | undefined) => {
    if (value?.kind !== 'dict') throw new Error('an update after the seal rewrites the form as other than a dictionary');
    const base = formBase?.entries ?? new Map<string, PdfValue>();
    for (const [k, v] of base) {
      const now = value.entries.get(k);
      if (now === undefined) throw new Error(`an update after the seal removes the form's ${k}`);
      if (k !== '/Fields' && k !== '/SigFlags' && !sameValue(v, now)) throw new Error(`an update after the seal changes the form's ${k}`);
    }
    for (const k of value.entries.keys())
      if (!base.has(k) && k !== '/Fields' && k !== '/SigFlags') throw new Error(`an update after the seal adds ${k} to the form`);
    const before = integerOf(base.get('/SigFlags')) ?? 0;
    const flags = value.entries.get('/SigFlags');
    if (flags !== undefined) {
      const now = integerOf(flags);
      if (now === undefined || (now & before) !== before || (now & ~(before | SIG_FLAGS)) !== 0)
        throw new Error(
          `an update after the seal sets the form's /SigFlags to ${describe(flags)} (from ${before}): only bits 1 and 2 may be added`,
        );
    }
    const nowFields = value.entries.get('/Fields');
    // Fields held in an object of their own could be changed without the form showing it: such a form keeps them.
    if (sealedFields?.kind === 'ref') {
      if (nowFields === undefined || !sameValue(sealedFields, nowFields))
        throw new Error('an update after the seal rewrites a form whose fields are not a direct array');
      return;
    }
    if (nowFields !== undefined && nowFields.kind !== 'array')
      throw new Error("an update after the seal sets the form's /Fields to other than an array");
    const now = nowFields?.items ?? [];
    if (now.length < fields.length || fields.some((f, i) => !sameValue(f, now[i]!)))
      throw new Error("an update after the seal changes the form's existing fields");
    for (const f of now.slice(fields.length)) {
      if (f.kind !== 'ref') throw new Error('an update after the seal adds a form field that is not a reference');
      added.push(f);
    }
    fields = now;
  };

  for (const [k, increment] of increments.entries()) {
    trailerProblem(increment.trailer, sealed);
    // The catalog first: it may name a form the update adds.
    const ordered = [...increment.objects].sort((a, b) => Number(b.num === root) - Number(a.num === root));
    for (const o of ordered) {
      const what = `object ${o.num}`;
      highest = Math.max(highest, o.num);
      // A reader meeting a generation other than the one its table gives rebuilds the table: each keeps its own.
      const gen = o.num === root ? sealed.rootGen : o.num === formNum ? formGen : 0;
      if (o.gen !== gen) throw new Error(`an update after the seal defines ${what} with generation ${o.gen}, not ${gen}`);
      if (o === increment.xrefStream) {
        if (o.num < firstFree || sealed.has(o.num, o.gen) || defined.has(o.num))
          throw new Error(`an update after the seal writes its cross-reference stream as ${what}, a number already in use`);
        continue;
      }
      if (o.num === root) {
        checkCatalog(o.value, sealed, (num) => {
          if (formNum !== undefined && formNum !== num) throw new Error('an update after the seal replaces the form');
          formNum = num;
          formGen = 0;
        });
        catalogs.push(o.value as PdfDict);
      } else if (o.num === formNum) {
        // A form the updates add is theirs: defined, and rewritten by later updates as they append fields.
        if (sealed.form?.num === undefined) defined.set(o.num, { ...o, update: k });
        checkForm(o.value);
      } else if (sealed.has(o.num, o.gen)) {
        throw new Error(`an update after the seal changes ${what}, which the seal covers`);
      } else if (o.num < firstFree) {
        throw new Error(`an update after the seal defines ${what}, a number the sealed revision refers to or keeps (below ${firstFree})`);
      } else if (defined.has(o.num)) {
        throw new Error(`an update after the seal defines ${what} again, which an earlier update added`);
      } else defined.set(o.num, { ...o, update: k });
    }
    const size = integerOf(increment.trailer.get('/Size'));
    if (size === undefined || size <= highest) {
      throw new Error(
        `an update's trailer gives /Size ${describe(increment.trailer.get('/Size'))}, not more than every object number (${highest})`,
      );
    }
  }
  // A form the catalog had in the sealed revision inside itself is checked where the catalog is rewritten.
  if (sealed.form && sealed.form.num === undefined) for (const c of catalogs) checkForm(c.entries.get('/AcroForm'));

  // Every reference an update writes names what it means: an object it defines, or one the seal covers, each with
  // its generation (a reference that names nothing, or the wrong generation, makes readers rebuild the table).
  for (const increment of increments) {
    for (const value of [...increment.objects.map((o) => o.value), ...increment.trailer.values()]) {
      for (const ref of refsIn(value)) {
        const mine = defined.get(ref.num);
        if (mine ? mine.gen !== ref.gen : !sealed.has(ref.num, ref.gen)) {
          throw new Error(
            `an update after the seal refers to ${ref.num} ${ref.gen} R, which is neither its own object nor one the seal covers`,
          );
        }
      }
    }
  }

  // What each added object is, by what names it: a /DSS the catalog names, its streams and VRI dictionaries, the
  // fields appended to the form and the document time-stamps they hold, the form itself when the update adds it.
  const roles = new Map<number, string>();
  const take = (ref: PdfValue | undefined, role: string, what: string): IncrementObject & { update: number } => {
    if (ref?.kind !== 'ref') throw new Error(`${what} is not a reference`);
    const o = defined.get(ref.num);
    if (!o || o.gen !== ref.gen) throw new Error(`${what} names ${ref.num} ${ref.gen} R, which is not an object added after the seal`);
    const had = roles.get(ref.num);
    if (had !== undefined && had !== role) throw new Error(`an update after the seal uses object ${ref.num} as ${had} and as ${role}`);
    roles.set(ref.num, role);
    return o;
  };
  if (formNum !== undefined && sealed.form?.num === undefined) roles.set(formNum, 'the form');
  const dataStream = (ref: PdfValue, what: string) => {
    const o = take(ref, 'validation data', what);
    if (!o.stream || o.value.kind !== 'dict' || [...o.value.entries.keys()].some((k) => !STREAM_KEYS.has(k)))
      throw new Error(`${what} names ${describe(ref)}, which is not a stream added after the seal`);
    return o;
  };
  const refArray = (v: PdfValue | undefined, what: string) => {
    if (v?.kind !== 'array') throw new Error(`${what} is not an array`);
    return v.items.map((item) => dataStream(item, what));
  };
  const dssObjects: (IncrementObject & { update: number })[] = [];
  for (const c of catalogs) {
    const ref = c.entries.get('/DSS');
    if (ref === undefined) continue;
    const was = sealedCatalog.entries.get('/DSS');
    if (was !== undefined && sameValue(was, ref)) continue;
    const dss = take(ref, 'a /DSS', "the catalog's /DSS");
    if (dss.stream || dss.value.kind !== 'dict')
      throw new Error(`an update after the seal adds object ${dss.num}, a /DSS that is not a dictionary`);
    const d = dss.value.entries;
    if ([...d.keys()].some((k) => !DSS_KEYS.has(k)) || (d.has('/Type') && nameOf(d.get('/Type')) !== '/DSS'))
      throw new Error(`an update after the seal adds object ${dss.num}, a /DSS with other keys`);
    for (const key of ['/Certs', '/OCSPs', '/CRLs']) if (d.has(key)) refArray(d.get(key), `the /DSS's ${key}`);
    if (d.has('/VRI')) {
      const vri = d.get('/VRI')!.kind === 'ref' ? take(d.get('/VRI'), 'a /VRI', "the /DSS's /VRI").value : d.get('/VRI')!;
      if (vri.kind !== 'dict') throw new Error("the /DSS's /VRI is not a dictionary");
      for (const [key, entry] of vri.entries) {
        if (!/^\/[0-9A-Fa-f]{40}$/.test(key)) throw new Error(`the /DSS's /VRI has the key ${key}, not a signature's SHA-1`);
        const v = entry.kind === 'ref' ? take(entry, 'a VRI dictionary', `the /VRI's ${key}`).value : entry;
        if (
          v.kind !== 'dict' ||
          [...v.entries.keys()].some((k2) => !VRI_KEYS.has(k2)) ||
          (v.entries.has('/Type') && nameOf(v.entries.get('/Type')) !== '/VRI')
        )
          throw new Error(`the /VRI's ${key} is not a VRI dictionary`);
        for (const k2 of ['/Cert', '/OCSP', '/CRL']) if (v.entries.has(k2)) refArray(v.entries.get(k2), `a VRI dictionary's ${k2}`);
        if (v.entries.has('/TU') && v.entries.get('/TU')!.kind !== 'string') throw new Error("a VRI dictionary's /TU is not a date");
        if (v.entries.has('/TS')) dataStream(v.entries.get('/TS')!, "a VRI dictionary's /TS");
      }
    }
    dssObjects.push(dss);
  }
  const documentTimestamps: (PdfSignature & { token: Buffer })[] = [];
  for (const field of added) {
    const o = take(field, 'a document time-stamp field', 'a field the form gained');
    const w = o.value.kind === 'dict' && !o.stream ? o.value.entries : undefined;
    if (!w || nameOf(w.get('/FT')) !== '/Sig')
      throw new Error(`an update after the seal adds form field ${o.num}, which is not a document time-stamp`);
    const rect = w.get('/Rect');
    if (
      [...w.keys()].some((k) => !WIDGET_KEYS.has(k)) ||
      rect?.kind !== 'array' ||
      rect.items.length !== 4 ||
      rect.items.some((n) => n.kind !== 'number' || Number(n.text) !== 0) ||
      (w.has('/Type') && nameOf(w.get('/Type')) !== '/Annot') ||
      (w.has('/Subtype') && nameOf(w.get('/Subtype')) !== '/Widget')
    )
      throw new Error(`an update after the seal adds object ${o.num}, a signature field that shows`);
    const ts = take(w.get('/V'), 'a document time-stamp', `form field ${o.num}'s /V`);
    const what = `document time-stamp ${ts.num}`;
    if (ts.stream || ts.value.kind !== 'dict') throw new Error(`an update after the seal adds ${what}, which is not a dictionary`);
    const d = ts.value.entries;
    if (
      [...d.keys()].some((k) => !DOC_TS_KEYS.has(k)) ||
      nameOf(d.get('/Type')) !== '/DocTimeStamp' ||
      nameOf(d.get('/SubFilter')) !== '/ETSI.RFC3161' ||
      nameOf(d.get('/Filter')) !== '/Adobe.PPKLite'
    ) {
      throw new Error(`an update after the seal adds object ${ts.num}, a document time-stamp of another kind`);
    }
    const sig = { ...signatureFields(ts.value, ts, what), docMdp: undefined };
    const own = increments[ts.update]!;
    if (!endsRevision(pdf, own.eofEnd, sig.revisionEnd))
      throw new Error(`${what}'s /ByteRange ends at byte ${sig.revisionEnd}, not where the revision it is in ends (${own.eofEnd})`);
    documentTimestamps.push({ ...sig, token: sig.contents });
  }
  for (const o of defined.values()) {
    if (roles.has(o.num)) continue;
    if (o.stream) throw new Error(`an update after the seal adds object ${o.num}, a stream no /DSS names`);
    throw new Error(`an update after the seal adds object ${o.num}, which is neither validation data nor a document time-stamp`);
  }
  documentTimestamps.sort((a, b) => a.revisionEnd - b.revisionEnd);
  const latest = catalogs.at(-1)?.entries.get('/DSS');
  const dss = latest?.kind === 'ref' ? dssObjects.find((o) => o.num === latest.num) : undefined;
  return {
    documentTimestamps,
    dss: dss ? dssOf(dss, defined) : empty,
    signatures: [seal, ...documentTimestamps.map(({ token: _token, ...s }) => s)],
    certification: sealed.certification,
  };
}

/**
 * A rewritten catalog: every key of the sealed one, its value the same (the /DSS may point elsewhere), and no key
 * added but /DSS, or /AcroForm when the sealed catalog had none (`addsForm` learns its object).
 */
function checkCatalog(value: PdfValue, sealed: SealedRevision, addsForm: (num: number) => void): void {
  if (value.kind !== 'dict') throw new Error('an update after the seal replaces the catalog with a non-dictionary');
  for (const [k, v] of sealed.catalog.entries) {
    const now = value.entries.get(k);
    if (now === undefined) throw new Error(`an update after the seal removes the catalog's ${k}`);
    if (k === '/DSS') continue;
    // A form inside the catalog is held to the form's rules (its fields may be appended to).
    if (k === '/AcroForm' && sealed.form?.num === undefined) continue;
    if (!sameValue(v, now)) throw new Error(`an update after the seal changes the catalog's ${k}`);
  }
  for (const [k, v] of value.entries) {
    if (sealed.catalog.entries.has(k)) continue;
    if (k === '/DSS') {
      if (v.kind !== 'ref') throw new Error("an update after the seal sets the catalog's /DSS to other than a reference");
    } else if (k === '/AcroForm') {
      if (v.kind !== 'ref') throw new Error("an update after the seal sets the catalog's /AcroForm to other than a reference");
      if (v.num < sealed.firstFree) throw new Error('an update after the seal gives the catalog a form the sealed revision refers to');
      addsForm(v.num);
    } else throw new Error(`an update after the seal adds ${k} to the catalog`);
  }
}

/** Why an update's trailer is more than a revision's bookkeeping: another catalog, other document information. */
function trailerProblem(trailer: Map<string, PdfValue>, sealed: SealedRevision): void {
  const root = trailer.get('/Root');
  if (root?.kind !== 'ref' || root.num !== sealed.root || root.gen !== sealed.rootGen) {
    throw new Error('an update after the seal replaces the catalog');
  }
  const info = trailer.get('/Info');
  // Left out, a reader shows none: no claim is added. Given, it must be the sealed one.
  if (info && (sealed.info === undefined || !sameValue(info, sealed.info))) {
    throw new Error("an update after the seal changes the document's information (/Info)");
  }
  const id = trailer.get('/ID');
  if (id && (id.kind !== 'array' || id.items.length !== 2 || id.items.some((i) => i.kind !== 'string'))) {
    throw new Error('an update after the seal gives an /ID that is not two strings');
  }
}

/** The validation data of a /DSS: each stream decoded. */
function dssOf(dss: IncrementObject, defined: Map<number, IncrementObject>): LongTermData['dss'] {
  const d = (dss.value as PdfDict).entries;
  const streams = (key: string): Buffer[] => {
    const list = d.get(key);
    if (list?.kind !== 'array') return [];
    return list.items.map((item) => {
      const o = item.kind === 'ref' ? defined.get(item.num) : undefined;
      if (!o?.stream || o.value.kind !== 'dict')
        throw new Error(`the /DSS names ${describe(item)} in ${key}, which is not a stream added after the seal`);
      return decodeStream(o.value, o.stream, `a /DSS stream (object ${o.num})`);
    });
  };
  return { certs: streams('/Certs'), ocsps: streams('/OCSPs'), crls: streams('/CRLs') };
}
