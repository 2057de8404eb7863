// Sealing PDFs for the corpus as the sandbox does (packages/sandbox/src/evidence/pades-sign.ts `sealPdf`: a pdf-lib placeholder, the
// CMS placed over its /ByteRange; then @libpdf/core's DSS and document time-stamp updates, packages/sandbox/src/seal.ts), with
// every step open to a variant: the CMS, the time-stamp, the placeholder's dictionary, the bytes before and after
// signing, the /ByteRange, the revocation data and the document time-stamps' authority. And hand-written incremental
// updates, for the changes an attacker appends.
import { randomBytes } from 'node:crypto';
import { PDF, type RevocationProvider, type TimestampAuthority as LibTsa } from '@libpdf/core';
import {
  PDFArray,
  PDFDict,
  PDFDocument,
  PDFHexString,
  PDFInvalidObject,
  PDFName,
  PDFNumber,
  PDFString,
  StandardFonts,
  type PDFRef,
} from 'pdf-lib';
import * as pkijs from 'pkijs';
import { buildCms, signatureTimestampAttribute, timestampToken, type CmsOptions, type TokenOptions } from './cms.js';
import { crl, digest, ocspResponse, type CorpusPki, type Hash, type Issued } from './pki.js';

/** The placeholder's length in hex digits (as sealPdf's): room for a CMS of 8 KiB, chain and time-stamp token included. */
export const SIGNATURE_BYTES = 16_384;
const BYTE_RANGE_PLACEHOLDER = '**********';

/** The size of the incompressible annex every corpus document carries near its start. */
export const PADDING_BYTES = 64 * 1024;

/**
 * A small document: `pages` pages of text, a catalog string (/Lang) and a form with /DA, /DR and /NeedAppearances;
 * and, written right after the catalog and page tree, an incompressible annex (`padding` bytes, raw, named by the
 * catalog as test/support/bulky-pdf.ts does): so a one-pass check holding only the file's head and tail has a
 * middle it does not hold, as a large download has (test/evidence/evidence-corpus.test.ts).
 */
export async function basePdf(text: string, pages = 1, padding = PADDING_BYTES): Promise<Buffer> {
  const doc = await PDFDocument.create({ updateMetadata: false });
  if (padding > 0) doc.catalog.set(PDFName.of('Annex'), doc.context.register(doc.context.stream(randomBytes(padding))));
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < pages; i++) {
    const page = doc.addPage([595, 842]);
    page.drawText(`${text} (page ${i + 1} of ${pages})`, { x: 50, y: 780, size: 14, font });
    page.drawText('The parties agree to the terms above. Amount: 1,000 EUR.', { x: 50, y: 750, size: 11, font });
  }
  doc.setTitle(text);
  doc.catalog.set(PDFName.of('Lang'), PDFString.of('en US'));
  const helv = doc.context.obj({ Type: 'Font', Subtype: 'Type1', BaseFont: 'Helvetica', Encoding: 'WinAnsiEncoding' });
  const form = doc.context.obj({
    Fields: [],
    NeedAppearances: false,
    DA: PDFString.of('/Helv 0 Tf 0 g'),
    DR: { Font: { Helv: doc.context.register(helv) } },
  });
  doc.catalog.set(PDFName.of('AcroForm'), doc.context.register(form));
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

export interface PlaceholderOptions {
  subFilter?: string;
  signingTime: Date;
  reason?: string;
  name?: string;
  /** A certification signature with DocMDP permissions P (1: no changes). */
  docMdp?: 1 | 2 | 3;
  signatureLength?: number;
  fieldName?: string;
  /** Extra entries for the signature dictionary, as PDF text (e.g. "/Cert <...>"). */
  extra?: string;
}

/**
 * The document with an empty signature (the placeholder /ByteRange and /Contents), saved whole without object
 * streams: what `sealPdf` signs (pdflibAddPlaceholder's layout), with a DocMDP reference when asked.
 */
export async function prepare(pdf: Uint8Array, options: PlaceholderOptions): Promise<Buffer> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const page = doc.getPages()[0]!;
  const byteRange = PDFArray.withContext(doc.context);
  byteRange.push(PDFNumber.of(0));
  for (let i = 0; i < 3; i++) byteRange.push(PDFName.of(BYTE_RANGE_PLACEHOLDER));
  const entries: Record<string, unknown> = {
    Type: 'Sig',
    Filter: 'Adobe.PPKLite',
    SubFilter: options.subFilter ?? 'ETSI.CAdES.detached',
    ByteRange: byteRange,
    Contents: PDFHexString.of('\0'.repeat(options.signatureLength ?? SIGNATURE_BYTES)),
    Reason: PDFString.of(options.reason ?? 'Signed by every participant'),
    M: PDFString.fromDate(options.signingTime),
    ContactInfo: PDFString.of('corpus'),
    Name: PDFString.of(options.name ?? 'esign corpus document seal'),
    Location: PDFString.of('esign corpus'),
    Prop_Build: { Filter: { Name: 'Adobe.PPKLite' } },
  };
  if (options.docMdp) {
    entries.Reference = [
      { Type: 'SigRef', TransformMethod: 'DocMDP', TransformParams: { Type: 'TransformParams', P: options.docMdp, V: '1.2' } },
    ];
  }
  const dict = doc.context.obj(entries as never) as unknown as PDFDict;
  let text = dict.toString();
  if (options.extra) text = text.replace(/>>\s*$/, `${options.extra}\n>>`);
  const sigRef = doc.context.register(PDFInvalidObject.of(Buffer.from(text, 'latin1')));
  const widget = doc.context.obj({
    Type: 'Annot',
    Subtype: 'Widget',
    FT: 'Sig',
    Rect: [0, 0, 0, 0],
    V: sigRef,
    T: PDFString.of(options.fieldName ?? 'Signature1'),
    F: 4,
    P: page.ref,
    AP: { N: doc.context.register(doc.context.formXObject([], { BBox: [0, 0, 0, 0], Resources: {} })) },
  });
  const widgetRef = doc.context.register(widget);
  const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray) ?? doc.context.obj([]);
  annots.push(widgetRef);
  page.node.set(PDFName.of('Annots'), annots);
  let form = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
  if (!form) {
    form = doc.context.obj({ Fields: [] });
    doc.catalog.set(PDFName.of('AcroForm'), doc.context.register(form));
  }
  form.set(PDFName.of('SigFlags'), PDFNumber.of(3));
  form.lookup(PDFName.of('Fields'), PDFArray).push(widgetRef);
  if (options.docMdp) doc.catalog.set(PDFName.of('Perms'), doc.context.obj({ DocMDP: sigRef }));
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

export type ByteRange = [number, number, number, number];

/**
 * Places a signature in a prepared document as @signpdf does: the /ByteRange written over its placeholder, the
 * signed bytes handed to `sign`, its answer written as hex into /Contents. `range` may change the /ByteRange first.
 */
export async function place(
  prepared: Buffer,
  sign: (signedBytes: Buffer, range: ByteRange) => Promise<Buffer>,
  range?: (computed: ByteRange, pdf: Buffer) => ByteRange,
): Promise<Buffer> {
  let pdf = prepared;
  if (pdf.subarray(-1).toString() === '\n') pdf = pdf.subarray(0, pdf.length - 1);
  if (pdf.subarray(-1).toString() === '\r') pdf = pdf.subarray(0, pdf.length - 1);
  pdf = Buffer.from(pdf);
  const placeholder = `/ByteRange [ 0 /${BYTE_RANGE_PLACEHOLDER} /${BYTE_RANGE_PLACEHOLDER} /${BYTE_RANGE_PLACEHOLDER} ]`;
  const at = pdf.lastIndexOf(placeholder);
  if (at === -1) throw new Error('no /ByteRange placeholder');
  const open = pdf.indexOf('<', pdf.indexOf('/Contents', at));
  const close = pdf.indexOf('>', open);
  let byteRange: ByteRange = [0, open, close + 1, pdf.length - close - 1];
  if (range) byteRange = range(byteRange, pdf);
  const text = `/ByteRange [${byteRange.join(' ')}]`;
  if (text.length > placeholder.length) throw new Error('the /ByteRange does not fit its placeholder');
  pdf.write(text.padEnd(placeholder.length, ' '), at, 'latin1');
  const [, b, c, d] = byteRange;
  const signature = await sign(Buffer.concat([pdf.subarray(0, b), pdf.subarray(c, c + d)]), byteRange);
  const hex = signature.toString('hex');
  if (hex.length > close - open - 1) throw new Error(`the signature (${signature.length} bytes) does not fit its placeholder`);
  pdf.write(hex.padEnd(close - open - 1, '0'), open + 1, 'latin1');
  return pdf;
}

// ---------------------------------------------------------------------------------------------------------------
// Authorities for @libpdf/core: time-stamps and revocation data of the corpus PKI

/** A TSA for @libpdf/core's document time-stamps. */
export function corpusTsa(
  pki: CorpusPki,
  overrides: Partial<Omit<TokenOptions, 'imprint'>> & { imprint?: (d: Uint8Array) => Uint8Array } = {},
): LibTsa {
  return {
    timestamp: async (d) =>
      new Uint8Array(
        await timestampToken({
          tsa: pki.tsa,
          genTime: new Date(),
          ...overrides,
          imprint: overrides.imprint ? overrides.imprint(d) : d,
        }),
      ),
  };
}

function issuedBy(cert: pkijs.Certificate, issuer: pkijs.Certificate): boolean {
  return Buffer.from(cert.issuer.toSchema().toBER(false)).equals(Buffer.from(issuer.subject.toSchema().toBER(false)));
}

export interface RevocationChoice {
  /** What to answer for `cert` (issued by the root): OCSP and CRL, or null for none. */
  ocsp?: (cert: pkijs.Certificate) => Promise<Buffer | null>;
  crl?: (cert: pkijs.Certificate) => Promise<Buffer | null>;
}

/** The root's own answers: OCSP "good" (or "revoked" for the revoked seal), the root's CRL listing the revoked seal. */
export function genuineRevocation(pki: CorpusPki, at?: Date): Required<RevocationChoice> {
  const when = () => at ?? new Date();
  return {
    ocsp: async (cert) =>
      ocspResponse({
        cert,
        issuer: pki.root.cert,
        responder: pki.root,
        status: cert.serialNumber.isEqual(pki.revokedSeal.cert.serialNumber) ? 'revoked' : 'good',
        revokedAt: pki.revokedAt,
        thisUpdate: when(),
        nextUpdate: new Date(when().getTime() + 7 * 24 * 3600 * 1000),
      }),
    crl: async () => rootCrl(pki, { thisUpdate: when() }),
  };
}

export function rootCrl(pki: CorpusPki, options: { hash?: Hash; thisUpdate?: Date; nextUpdate?: Date; signer?: Issued } = {}): Buffer {
  const thisUpdate = options.thisUpdate ?? new Date();
  return crl({
    issuer: options.signer ?? pki.root,
    revoked: [{ cert: pki.revokedSeal.cert, at: pki.revokedAt }],
    thisUpdate,
    nextUpdate: options.nextUpdate ?? new Date(thisUpdate.getTime() + 7 * 24 * 3600 * 1000),
    ...(options.hash ? { hash: options.hash } : {}),
  });
}

/**
 * A revocation provider for @libpdf/core: answers for certificates the corpus root issued (and only those: a
 * foreign certificate gets nothing), `seal` for the seal's certificate (any certificate with the seal's key but the
 * TSA's), `others` for the rest (the TSA's).
 */
export function revocationProvider(
  pki: CorpusPki,
  seal: RevocationChoice = genuineRevocation(pki),
  others: RevocationChoice = genuineRevocation(pki),
): RevocationProvider {
  const tsaKey = Buffer.from(pki.tsa.cert.subjectPublicKeyInfo.toSchema().toBER(false));
  const choose = (cert: pkijs.Certificate) =>
    Buffer.from(cert.subjectPublicKeyInfo.toSchema().toBER(false)).equals(tsaKey) ? others : seal;
  return {
    getOCSP: async (certDer) => {
      const cert = pkijs.Certificate.fromBER(certDer);
      if (!issuedBy(cert, pki.root.cert) || !(await cert.verify(pki.root.cert).catch(() => false))) return null;
      const answer = await choose(cert).ocsp?.(cert);
      return answer ? new Uint8Array(answer) : null;
    },
    getCRL: async (certDer) => {
      const cert = pkijs.Certificate.fromBER(certDer);
      if (!issuedBy(cert, pki.root.cert) || !(await cert.verify(pki.root.cert).catch(() => false))) return null;
      const answer = await choose(cert).crl?.(cert);
      return answer ? new Uint8Array(answer) : null;
    },
  };
}

/** B-LT: the /DSS update (@libpdf/core), with the corpus's revocation data. */
export async function addValidationData(pdf: Uint8Array, revocation: RevocationProvider): Promise<Buffer> {
  const doc = await PDF.load(pdf);
  return Buffer.from((await doc.addValidationData({ revocationProvider: revocation })).bytes);
}

/** B-LTA: /DSS, document time-stamp, /DSS of its authority (@libpdf/core), as `SandboxSeal.archiveTimestamp`. */
export async function addArchivalData(pdf: Uint8Array, tsa: LibTsa, revocation: RevocationProvider): Promise<Buffer> {
  const doc = await PDF.load(pdf);
  return Buffer.from((await doc.addArchivalData({ timestampAuthority: tsa, revocationProvider: revocation })).bytes);
}

// ---------------------------------------------------------------------------------------------------------------
// The seal, every step open

export type Level = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

export interface SealSpec {
  level: Level;
  /** The document (default: a one-page contract). */
  pdf?: Buffer;
  signer?: Issued;
  signingTime?: Date;
  placeholder?: Partial<PlaceholderOptions>;
  /** Overrides for the seal's CMS. */
  cms?: Partial<Omit<CmsOptions, 'unsigned'>>;
  /** Replaces the CMS altogether (for non-CMS sub-filters). */
  signature?: (signedBytes: Buffer, range: ByteRange) => Promise<Buffer>;
  /** Overrides for the signature time-stamp (B-T and above); `imprint` maps the signature value's digest. */
  timestamp?: Partial<Omit<TokenOptions, 'imprint'>> & { imprint?: (d: Buffer) => Buffer };
  /** Edits the prepared document before it is signed. */
  beforeSigning?: (prepared: Buffer) => Buffer;
  byteRange?: (computed: ByteRange, pdf: Buffer) => ByteRange;
  /** Edits the signed document (B-B/B-T) before the long-term updates. */
  afterSigning?: (signed: Buffer) => Buffer;
  revocation?: RevocationProvider;
  documentTsa?: LibTsa;
}

export async function seal(pki: CorpusPki, spec: SealSpec): Promise<Buffer> {
  const signer = spec.signer ?? pki.seal;
  const signingTime = spec.signingTime ?? new Date();
  let prepared = await prepare(spec.pdf ?? (await basePdf('Employment contract')), { signingTime, ...spec.placeholder });
  if (spec.beforeSigning) prepared = spec.beforeSigning(prepared);
  const stamp = spec.level !== 'B-B';
  const sign =
    spec.signature ??
    (async (signedBytes: Buffer) => {
      const hash = spec.cms?.hash ?? 'SHA-256';
      return buildCms({
        signer,
        contentDigest: digest(hash, signedBytes),
        content: signedBytes,
        ...spec.cms,
        ...(stamp
          ? {
              unsigned: async (value: Buffer) => {
                const imprintHash = spec.timestamp?.imprintHash ?? 'SHA-256';
                const own = digest(imprintHash, value);
                const token = await timestampToken({
                  tsa: pki.tsa,
                  genTime: signingTime,
                  ...spec.timestamp,
                  imprint: spec.timestamp?.imprint ? spec.timestamp.imprint(own) : own,
                });
                return [signatureTimestampAttribute(token)];
              },
            }
          : {}),
      });
    });
  let signed = await place(prepared, sign, spec.byteRange);
  if (spec.afterSigning) signed = spec.afterSigning(signed);
  const revocation = spec.revocation ?? revocationProvider(pki);
  if (spec.level === 'B-LT') return addValidationData(signed, revocation);
  if (spec.level === 'B-LTA') return addArchivalData(signed, spec.documentTsa ?? corpusTsa(pki), revocation);
  return signed;
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-written incremental updates

export interface UpdateObject {
  num: number;
  gen?: number;
  /** The object's body (between "n g obj" and "endobj"). */
  body: string | Buffer;
}

/** The last trailer's entries that an update carries over: /Root, /Info, /ID, and /Size and the last startxref. */
export function lastTrailer(pdf: Buffer): { size: number; root: string; info?: string; id?: string; startxref: number } {
  const startxref = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(pdf.subarray(-64).toString('latin1'))?.[1]);
  const at = pdf.lastIndexOf('trailer');
  let dict = at === -1 ? '' : pdf.subarray(at, pdf.lastIndexOf('startxref')).toString('latin1');
  if (at === -1 || at < startxref) {
    // A cross-reference stream: its dictionary holds the trailer's entries.
    dict = pdf.subarray(startxref, startxref + 2048).toString('latin1');
  }
  const get = (key: string, re: string) => new RegExp(`/${key}\\s*(${re})`).exec(dict)?.[1];
  const size = Number(get('Size', '\\d+'));
  const root = get('Root', '\\d+\\s+\\d+\\s+R');
  if (!root || !Number.isFinite(size) || !Number.isFinite(startxref)) throw new Error('no trailer to update');
  const info = get('Info', '\\d+\\s+\\d+\\s+R');
  const id = get('ID', '\\[[^\\]]*\\]');
  return { size, root, startxref, ...(info ? { info } : {}), ...(id ? { id } : {}) };
}

/**
 * Appends an incremental update: `objects`, a cross-reference table listing exactly them (subsections by runs), a
 * trailer carrying /Root, /Info and /ID over, /Prev, and startxref. `free` lists object numbers marked free.
 */
export function appendUpdate(
  pdf: Buffer,
  objects: UpdateObject[],
  options: { free?: number[]; trailerExtra?: string; prev?: number } = {},
): Buffer {
  const t = lastTrailer(pdf);
  const parts: Buffer[] = [pdf];
  let offset = pdf.length;
  const push = (b: Buffer | string) => {
    const buf = typeof b === 'string' ? Buffer.from(b, 'latin1') : b;
    parts.push(buf);
    offset += buf.length;
  };
  if (pdf[pdf.length - 1] !== 0x0a) push('\n');
  const entries = new Map<number, string>();
  for (const o of objects) {
    entries.set(o.num, `${String(offset).padStart(10, '0')} ${String(o.gen ?? 0).padStart(5, '0')} n\r\n`);
    push(`${o.num} ${o.gen ?? 0} obj\n`);
    push(o.body);
    push('\nendobj\n');
  }
  for (const n of options.free ?? []) entries.set(n, `0000000000 00001 f\r\n`);
  const xrefAt = offset;
  const nums = [...entries.keys()].sort((a, b) => a - b);
  let table = 'xref\n';
  for (let i = 0; i < nums.length;) {
    let j = i;
    while (j + 1 < nums.length && nums[j + 1] === nums[j]! + 1) j++;
    table += `${nums[i]} ${j - i + 1}\n${nums
      .slice(i, j + 1)
      .map((n) => entries.get(n))
      .join('')}`;
    i = j + 1;
  }
  const size = Math.max(t.size, ...nums.map((n) => n + 1));
  push(table);
  push(
    `trailer\n<<\n/Size ${size}\n/Root ${t.root}\n${t.info ? `/Info ${t.info}\n` : ''}/Prev ${options.prev ?? t.startxref}\n${t.id ? `/ID ${t.id}\n` : ''}${options.trailerExtra ?? ''}>>\nstartxref\n${xrefAt}\n%%EOF\n`,
  );
  return Buffer.concat(parts);
}

/** The document as pdf-lib reads it (every revision, the last definition of each object winning). */
export async function readDoc(pdf: Buffer): Promise<PDFDocument> {
  return PDFDocument.load(pdf, { updateMetadata: false, ignoreEncryption: true });
}

/** The object number and generation of a reference. */
export function refOf(ref: PDFRef): { num: number; gen: number } {
  return { num: ref.objectNumber, gen: ref.generationNumber };
}

/** A stream object's body: its dictionary (given without /Length) and data. */
export function streamBody(dict: string, data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  return Buffer.concat([
    Buffer.from(`<< ${dict} /Length ${bytes.length} >>\nstream\n`, 'latin1'),
    bytes,
    Buffer.from('\nendstream', 'latin1'),
  ]);
}

/** Inserts `text` just before the last cross-reference table of a document saved whole, and moves startxref. */
export function insertBeforeXref(pdf: Buffer, text: string): Buffer {
  const xref = pdf.lastIndexOf('\nxref\n') + 1;
  const m = /startxref\s+(\d+)(\s+%%EOF\s*)$/.exec(pdf.toString('latin1'));
  if (!xref || !m || Number(m[1]) !== xref) throw new Error('no cross-reference table at startxref');
  const inserted = Buffer.from(text, 'latin1');
  const out = Buffer.concat([pdf.subarray(0, xref), inserted, pdf.subarray(xref)]).toString('latin1');
  const moved = out.replace(/startxref\s+\d+(\s+%%EOF\s*)$/, `startxref\n${xref + inserted.length}$1`);
  return Buffer.from(moved, 'latin1');
}

/** Replaces, in place and at the same length, the first occurrence of `from` after `start`. */
export function replaceSameLength(pdf: Buffer, from: string, to: string, start = 0): Buffer {
  if (from.length !== to.length) throw new Error('not the same length');
  const at = pdf.indexOf(from, start, 'latin1');
  if (at === -1) throw new Error(`"${from}" is not in the file`);
  const out = Buffer.from(pdf);
  out.write(to, at, 'latin1');
  return out;
}
