// Forgeries a review of the seal check found, each kept as a regression test: a check must refuse them whether it
// holds the PDF whole or reads it in the one pass a large file gets (src/evidence/pdf-stream.ts). Each is built
// from real parts: a CA and seal of our own (src/evidence/pki.ts) or the sandbox's seal, and @signpdf to place a
// CMS in a PDF as a signer would.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import * as asn1js from 'asn1js';
import { PDFArray, PDFDict, PDFDocument, PDFName, PDFRef, PDFString, StandardFonts } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { beforeAll, describe, expect, it } from 'vitest';
import { contentInfoDer, signCms } from '../../src/evidence/cms.js';
import { findSeal, readLongTermData } from '../../src/evidence/long-term.js';
import { checkPdfSignature, type PdfSignatureCheck } from '../../src/evidence/pades-verify.js';
import { wholePdf } from '../../src/evidence/pdf-bytes.js';
import { StreamedPdf } from '../../src/evidence/pdf-stream.js';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  OID,
  parseCertificates,
  type SigningIdentity,
} from '../../src/evidence/pki.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { bulkyPdf } from '../support/bulky-pdf.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

const at = new Date();

/**
 * Both checks' verdicts: the whole file, and one pass holding little of it. The two are one reading of the file
 * (src/evidence/pdf-xref.ts): they must agree on every input, their verdicts and the reasons they give.
 */
async function bothChecks(pdf: Buffer, anchors: pkijs.Certificate[], tail = 48 * 1024): Promise<PdfSignatureCheck[]> {
  const pass = new StreamedPdf({ holdWhole: 0, head: 20 * 1024, tail });
  for (let i = 0; i < pdf.length; i += 65_536) pass.update(pdf.subarray(i, i + 65_536));
  const checks = [
    await checkPdfSignature(pdf, trustAnchorsOnly(anchors), at),
    await checkPdfSignature(pass.bytes(), trustAnchorsOnly(anchors), at),
  ];
  agree(checks[0]!, checks[1]!);
  return checks;
}

/**
 * The seal is found and read whole, its signature verifies over the bytes it names, and what follows it is only what
 * may: the file's structure holds, whatever the trust checks (chains, revocation) say of its certificates.
 */
function sound(check: PdfSignatureCheck): void {
  expect(check).toMatchObject({ signed: true, signatureValid: true, coversWholeFile: true });
  expect(check.indication, check.problems.join('; ')).not.toBe('TOTAL_FAILED');
}

/** The whole-file check and the one-pass check of one file say the same. */
function agree(whole: PdfSignatureCheck, pass: PdfSignatureCheck): void {
  const verdict = (c: PdfSignatureCheck) => ({
    indication: c.indication,
    subIndication: c.subIndication,
    signed: c.signed,
    signatureValid: c.signatureValid,
    coversWholeFile: c.coversWholeFile,
    level: c.level,
    problems: c.problems,
  });
  expect(verdict(pass), 'the one-pass check agrees with the whole-file check').toEqual(verdict(whole));
}

/** A one-page PDF "signed" with whatever CMS `cms` is, placed as a signer places its signature. */
async function signedWith(cms: Buffer, text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc.addPage().drawText(text, { x: 50, y: 700, font: await doc.embedFont(StandardFonts.Helvetica) });
  pdflibAddPlaceholder({
    pdfDoc: doc,
    reason: 'x',
    location: 'x',
    contactInfo: 'x',
    name: 'x',
    signatureLength: 16_384,
    subFilter: SUBFILTER_ETSI_CADES_DETACHED,
    widgetRect: [0, 0, 0, 0],
  });
  class Replay extends Signer {
    override async sign(): Promise<Buffer> {
      return cms;
    }
  }
  return new SignPdf().sign(Buffer.from(await doc.save({ useObjectStreams: false })), new Replay());
}

describe('a seal that is not a signature over the document', () => {
  it('refuses a time-stamp token lifted from a genuine seal and relabelled as data', async () => {
    const seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-forgery-')));
    const anchors = parseCertificates(seal.caCertificate);
    const genuine = await seal.seal(await bulkyPdf(1000), 'genuine', at);
    // The signature time-stamp token inside the genuine seal's CMS: anyone holding the PDF has it.
    const m = /\/ByteRange\s*\[\s*0\s+(\d+)\s+(\d+)/.exec(genuine.toString('latin1'))!;
    const hex = genuine.subarray(Number(m[1]) + 1, Number(m[2]) - 1).toString('latin1');
    const sd = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: asn1js.fromBER(Buffer.from(hex, 'hex')).result }).content });
    const attribute = sd.signerInfos[0]!.unsignedAttrs!.attributes.find((a) => a.type === OID.signatureTimeStampToken)!;
    const token = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: attribute.values[0] }).content });
    token.encapContentInfo.eContentType = OID.data; // outside what the token's signature covers
    const forged = await signedWith(contentInfoDer(token), 'FORGED: pay Mallory 1,000,000');
    for (const check of await bothChecks(forged, anchors)) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', signatureValid: false });
      expect(check.problems.join()).toMatch(/not a detached signature over the document/);
    }
  });

  it('refuses a signature without signed attributes (over some bytes, not bound to these)', async () => {
    const ca = await createCertificateAuthority({ O: 'review', CN: 'review CA' }, at);
    const id = await loadSigningIdentity(await issueSigningCertificate(ca, { O: 'review', CN: 'review seal' }, at), [ca.certificate]);
    const cert = id.certificate;
    const sd = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: cert.issuer, serialNumber: cert.serialNumber }),
        }),
      ],
      certificates: [cert],
    });
    await sd.sign(id.privateKey, 0, 'SHA-256', new Uint8Array([0]).buffer);
    const pdf = await signedWith(contentInfoDer(sd), 'any document at all');
    for (const check of await bothChecks(pdf, parseCertificates(ca.certificate))) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', signatureValid: false });
    }
  });
});

/**
 * A document sealed incrementally, as providers seal, whose first revision its author wrote, and a revision after
 * the seal that replaces (or fills in) object 5, the page's second content stream. `variant`: how the first
 * revision hides object 5 from a reader of its cross-reference tables alone.
 */
async function sealedThenChanged(
  id: SigningIdentity,
  variant: 'xrefstm' | 'prev-real' | 'prev-ref' | 'dangling',
  /** How the page writes its reference to object 5 (readers accept all of these). */
  reference = '5 0 R',
): Promise<{ sealed: Buffer; tampered: Buffer }> {
  let out = Buffer.alloc(0);
  const offsets: Record<number, number> = {};
  const put = (s: string | Buffer) => (out = Buffer.concat([out, typeof s === 'string' ? Buffer.from(s, 'latin1') : s]));
  const obj = (n: number, body: string) => {
    offsets[n] = out.length;
    put(`${n} 0 obj\n${body}\nendobj\n`);
  };
  const stream = (n: number, dict: string, data: Buffer | string) => {
    const d = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    offsets[n] = out.length;
    put(`${n} 0 obj\n<< ${dict} /Length ${d.length} >>\nstream\n`);
    put(d);
    put('\nendstream\nendobj\n');
  };
  const entry = (off: number, free = false) => `${String(off).padStart(10, '0')} ${free ? '65535 f' : '00000 n'} \n`;
  const table = (nums: number[]) => nums.map((n) => (n < 0 ? entry(0, true) : entry(offsets[n]!))).join('');

  put('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n');
  obj(1, '<< /Type /Catalog /Pages 2 0 R /Padding 7 0 R >>');
  obj(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  obj(3, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [4 0 R ${reference}] /Resources << /Font << /F1 6 0 R >> >> >>`);
  stream(4, '', 'BT /F1 24 Tf 72 700 Td (Pay Bob 100 EUR) Tj ET');
  if (variant !== 'dangling') stream(5, '', 'BT /F1 24 Tf 72 650 Td (Clause 2: net 30 days) Tj ET');
  obj(6, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  stream(7, '', Buffer.alloc(200_000, 0x20)); // the middle of the file, which the one pass does not hold
  let firstXref: number;
  if (variant === 'dangling') {
    // Object 5 is referenced by the page and defined nowhere.
    firstXref = out.length;
    put(`xref\n0 8\n${table([-1, 1, 2, 3, 4, -1, 6, 7])}trailer\n<< /Size 8 /Root 1 0 R >>\nstartxref\n${firstXref}\n%%EOF\n`);
  } else if (variant === 'xrefstm') {
    // A hybrid file: object 5 is listed in the cross-reference stream /XRefStm names, and free in the table.
    const row = Buffer.alloc(7);
    row[0] = 1;
    row.writeUInt32BE(offsets[5]!, 1);
    stream(8, '/Type /XRef /Size 9 /W [1 4 2] /Index [5 1]', row);
    firstXref = out.length;
    put(`xref\n0 9\n${table([-1, 1, 2, 3, 4, -1, 6, 7, 8])}`);
    put(`trailer\n<< /Size 9 /Root 1 0 R /XRefStm ${offsets[8]} >>\nstartxref\n${firstXref}\n%%EOF\n`);
  } else {
    // Two tables: the older lists object 5; the newer does not, and names the older by a /Prev readers still follow.
    const older = out.length;
    put(`xref\n0 8\n${table([-1, 1, 2, 3, 4, 5, 6, 7])}trailer\n<< /Size 8 /Root 1 0 R >>\nstartxref\n${older}\n%%EOF\n`);
    firstXref = out.length;
    const prev = variant === 'prev-ref' ? `${older} 0 R` : `${older}.`;
    put(
      `xref\n0 1\n${entry(0, true)}1 1\n${entry(offsets[1]!)}trailer\n<< /Size 8 /Root 1 0 R /Prev ${prev} >>\nstartxref\n${firstXref}\n%%EOF\n`,
    );
  }
  // The seal, appended as an incremental update: the catalog gains a form, whose one field holds the seal.
  obj(1, '<< /Type /Catalog /Pages 2 0 R /Padding 7 0 R /AcroForm << /Fields [10 0 R] /SigFlags 3 >> >>');
  obj(10, '<< /FT /Sig /T (Seal) /V 9 0 R /Type /Annot /Subtype /Widget /F 132 /Rect [0 0 0 0] /P 3 0 R >>');
  const slot = '/ByteRange [0 0000000000 0000000000 0000000000]';
  const sigAt = out.length;
  put(`9 0 obj\n<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /ETSI.CAdES.detached /M (D:20260101000000Z) ${slot} /Contents <`);
  const b = out.length - 1;
  put('0'.repeat(32_768));
  const tail = '> >>\nendobj\n';
  put(tail);
  const c = out.length - tail.length + 1;
  const sealXref = out.length;
  put(
    `xref\n0 2\n${entry(0, true)}${entry(offsets[1]!)}9 2\n${entry(sigAt)}${entry(offsets[10]!)}` +
      `trailer\n<< /Size 11 /Root 1 0 R /Prev ${firstXref} >>\nstartxref\n${sealXref}\n%%EOF\n`,
  );
  const d = out.length - c;
  out.write(
    `/ByteRange [0 ${String(b).padStart(10, '0')} ${String(c).padStart(10, '0')} ${String(d).padStart(10, '0')}]`,
    out.indexOf(slot, sigAt, 'latin1'),
    'latin1',
  );
  const digest = createHash('sha256')
    .update(out.subarray(0, b))
    .update(out.subarray(c, c + d))
    .digest();
  const cms = contentInfoDer(await signCms(id, { type: OID.data, digest }, [id.certificate]));
  out.write(cms.toString('hex').padEnd(32_768, '0'), b + 1, 'latin1');
  const sealed = Buffer.from(out);
  // After the seal: object 5 replaced, or filled in.
  stream(5, '', 'BT /F1 24 Tf 72 650 Td (AND PAY MALLORY 1,000,000 EUR) Tj ET');
  const lastXref = out.length;
  put(
    `xref\n0 1\n${entry(0, true)}5 1\n${entry(offsets[5]!)}trailer\n<< /Size 11 /Root 1 0 R /Prev ${sealXref} >>\nstartxref\n${lastXref}\n%%EOF\n`,
  );
  return { sealed, tampered: out };
}

describe('an update after the seal that changes what the sealed pages show', () => {
  let id: SigningIdentity;
  let anchors: pkijs.Certificate[];
  beforeAll(async () => {
    const ca = await createCertificateAuthority({ O: 'review', CN: 'review CA' }, at);
    id = await loadSigningIdentity(await issueSigningCertificate(ca, { O: 'review', CN: 'review seal' }, at), [ca.certificate]);
    anchors = parseCertificates(ca.certificate);
  });

  // A sealed revision a reader of its tables alone reads otherwise than a reader of its stream, or whose /Prev is not
  // an offset, is itself refused now (it was accepted while nothing followed the seal): so is any update after it.
  it.each([
    ['xrefstm', /a hybrid-reference file/],
    ['prev-real', /names a \/Prev that is not a byte offset \(\d+\.\)/],
    ['prev-ref', /names a \/Prev that is not a byte offset \(\d+ 0 R\)/],
  ] as const)('is refused when the sealed revision hides the object (%s), sealed alone or changed after', async (variant, reason) => {
    const { sealed, tampered } = await sealedThenChanged(id, variant);
    for (const pdf of [sealed, tampered]) {
      for (const check of await bothChecks(pdf, anchors)) {
        expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE', coversWholeFile: false });
        expect(check.problems.join()).toMatch(reason);
      }
    }
  });

  it('is refused when the sealed revision leaves the object free (dangling) and an update fills it in', async () => {
    const { sealed, tampered } = await sealedThenChanged(id, 'dangling');
    for (const check of await bothChecks(sealed, anchors)) sound(check);
    for (const check of await bothChecks(tampered, anchors)) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE', coversWholeFile: false });
      expect(check.problems.join()).toMatch(/added after signing.*defines object 5, a number the sealed revision refers to/);
    }
  });

  it.each([
    ['leading zeros', '0000000000005 0 R'],
    ['a comment between its parts', '5 0%note\nR'],
    ['no space before R', '5 0R'],
    ["white space across the one pass's chunks", `5${' '.repeat(100_000)}0 R`],
  ])('is refused when the sealed page refers to the object it fills in, written with %s', async (_, reference) => {
    const { sealed, tampered } = await sealedThenChanged(id, 'dangling', reference);
    for (const check of await bothChecks(sealed, anchors)) sound(check);
    for (const check of await bothChecks(tampered, anchors)) {
      expect(check.problems.join()).toMatch(/defines object 5, a number the sealed revision refers to/);
    }
  });
});

describe('an update whose cross-reference table says other than what it defines', () => {
  let seal: SandboxSeal;
  let anchors: pkijs.Certificate[];
  let sealed: Buffer;
  let content: number;
  let root: number;
  let prev: number;
  beforeAll(async () => {
    seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-forgery-xref-')));
    anchors = parseCertificates(seal.caCertificate);
    sealed = await seal.seal(await bulkyPdf(1000), 'genuine', at);
    const doc = await PDFDocument.load(sealed);
    const contents = doc.getPage(0).node.get(PDFName.of('Contents'));
    content = ((contents instanceof PDFArray ? contents.get(0) : contents) as PDFRef).objectNumber;
    root = (doc.context.trailerInfo.Root as PDFRef).objectNumber;
    prev = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(sealed.toString('latin1'))![1]);
  });
  const entry = (o: number, free = false) => `${String(o).padStart(10, '0')} ${free ? '65535 f' : '00000 n'} \n`;

  it('is refused when its table places the page’s content inside a stream’s data (a reader would show that)', async () => {
    const fake = `${content} 0 obj\n<< /Length 44 >>\nstream\nBT /F1 24 Tf 72 700 Td (Pay Mallory) Tj ET\nendstream\nendobj\n`;
    const streamAt = sealed.length;
    const head = `1000 0 obj\n<< /Length ${fake.length} >>\nstream\n`;
    const dssAt = streamAt + head.length + fake.length + '\nendstream\nendobj\n'.length;
    const dss = `1001 0 obj\n<< /Type /DSS /Certs [1000 0 R] >>\nendobj\n`;
    const xrefAt = dssAt + dss.length;
    const update =
      `${head}${fake}\nendstream\nendobj\n${dss}xref\n0 1\n${entry(0, true)}${content} 1\n${entry(streamAt + head.length)}` +
      `1000 2\n${entry(streamAt)}${entry(dssAt)}trailer\n<< /Size 1002 /Root ${root} 0 R /Prev ${prev} >>\nstartxref\n${xrefAt}\n%%EOF\n`;
    for (const check of await bothChecks(Buffer.concat([sealed, Buffer.from(update, 'latin1')]), anchors)) {
      expect(check.problems.join()).toMatch(/places object \d+ at byte \d+, where the update does not define it/);
    }
  });

  it('is refused when its table frees an object the seal covers, or its startxref points elsewhere', async () => {
    const freed = `xref\n0 1\n${entry(0, true)}${content} 1\n${entry(0, true)}trailer\n<< /Size ${content + 1} /Root ${root} 0 R /Prev ${prev} >>\nstartxref\n${sealed.length}\n%%EOF\n`;
    for (const check of await bothChecks(Buffer.concat([sealed, Buffer.from(freed, 'latin1')]), anchors)) {
      expect(check.problems.join()).toMatch(/frees object/);
    }
    const elsewhere = `xref\n0 1\n${entry(0, true)}trailer\n<< /Size 10 /Root ${root} 0 R /Prev ${prev} >>\nstartxref\n${prev}\n%%EOF\n`;
    for (const check of await bothChecks(Buffer.concat([sealed, Buffer.from(elsewhere, 'latin1')]), anchors)) {
      expect(check.problems.join()).toMatch(/startxref .* is not where its cross-reference table is/);
    }
  });

  it('does not take a signing time from bytes appended after the seal', async () => {
    const comment = `%/M (D:19990101000000Z)\nxref\n0 1\n${entry(0, true)}trailer\n<< /Size 10 /Root ${root} 0 R /Prev ${prev} >>\n`;
    const xrefAt = sealed.length + comment.indexOf('xref');
    const update = `${comment}startxref\n${xrefAt}\n%%EOF\n`;
    const [whole] = await bothChecks(Buffer.concat([sealed, Buffer.from(update, 'latin1')]), anchors);
    const genuine = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), at);
    expect(whole!.signingTime).toBe(genuine.signingTime);
  });

  /** A consistent update: its objects, then a table listing each where it is written, chained to the seal. */
  const update = (objects: [number, number, string][], trailer = '', glue = false): Buffer => {
    let body = '';
    const at: [number, number, number][] = [];
    for (const [num, gen, text] of objects) {
      at.push([num, gen, sealed.length + body.length]);
      body += `${num} ${gen} obj\n${text}\nendobj\n`;
    }
    const xrefAt = sealed.length + body.length;
    const eol = glue ? '' : ' \n';
    const rows = at
      .map(([num, gen, offset]) => `${num} 1\n${String(offset).padStart(10, '0')} ${String(gen).padStart(5, '0')} n${eol}`)
      .join('');
    const size = Math.max(1002, ...objects.map(([n]) => n + 1));
    return Buffer.concat([
      sealed,
      Buffer.from(
        `${body}xref\n0 1\n0000000000 65535 f${eol}${rows}trailer\n<< /Size ${size} /Root ${root} 0 R /Prev ${prev}${trailer} >>\nstartxref\n${xrefAt}\n%%EOF\n`,
        'latin1',
      ),
    ]);
  };

  it('is refused when it plants an object for a reader that rebuilds the table (in a stream, or behind entries without their end of line)', async () => {
    const planted = `${content} 0 obj << /Length 44 >> stream\nBT /F1 24 Tf 72 700 Td (Pay Mallory) Tj ET\nendstream endobj`;
    const dss = update([
      [1000, 0, `<< /Length ${planted.length} >>\nstream\n${planted}\nendstream`],
      [1001, 0, '<< /Type /DSS /Certs [1000 0 R] >>'],
    ]);
    for (const check of await bothChecks(dss, anchors))
      expect(check.problems.join()).toMatch(/holds "\d+ 0 obj" at byte \d+, outside its structure/);
    const glued = update([[1001, 0, '<< /Type /DSS >>']], '', true);
    for (const check of await bothChecks(glued, anchors)) expect(check.problems.join()).toMatch(/a malformed xref entry/);
  });

  it('is refused when it gives the catalog another generation, or the document other information', async () => {
    const catalog = (await PDFDocument.load(sealed)).catalog.toString();
    for (const check of await bothChecks(update([[root, 1, catalog]]), anchors)) {
      expect(check.problems.join()).toMatch(/generation 1|replaces the catalog/);
    }
    const info = update([[1001, 0, '<< /Type /DSS >>']], ' /Info 1001 0 R');
    for (const check of await bothChecks(info, anchors)) expect(check.problems.join()).toMatch(/document's information/);
  });
});

/** One 20-byte cross-reference table entry. */
const xrefEntry = (offset: number, free = false) => `${String(offset).padStart(10, '0')} ${free ? '65535 f' : '00000 n'} \n`;

/** A PDF written by hand, byte for byte: each object where a test puts it, listed in a cross-reference or not. */
class Writer {
  out = Buffer.alloc(0);
  /** Where each listed object is written. */
  readonly offsets = new Map<number, number>();

  put(text: string | Buffer): void {
    this.out = Buffer.concat([this.out, typeof text === 'string' ? Buffer.from(text, 'latin1') : text]);
  }

  obj(n: number, body: string, listed = true): void {
    if (listed) this.offsets.set(n, this.out.length);
    this.put(`${n} 0 obj\n${body}\nendobj\n`);
  }

  stream(n: number, dict: string, data: Buffer | string, listed = true): void {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    if (listed) this.offsets.set(n, this.out.length);
    this.put(`${n} 0 obj\n<< ${dict} /Length ${bytes.length} >>\nstream\n`);
    this.put(bytes);
    this.put('\nendstream\nendobj\n');
  }

  /** A table listing `nums` where they were written, then its trailer; returns where it starts. */
  table(nums: number[], trailer: string, startxref = true): number {
    const at = this.out.length;
    const rows = [...nums].sort((a, b) => a - b).map((n) => `${n} 1\n${xrefEntry(this.offsets.get(n)!)}`);
    this.put(`xref\n0 1\n${xrefEntry(0, true)}${rows.join('')}trailer\n<< ${trailer} >>\n`);
    if (startxref) this.put(`startxref\n${at}\n%%EOF\n`);
    return at;
  }

  /** Signature dictionary `n`, its /ByteRange and /Contents left to `sign`. */
  signature(n: number, subFilter: string, extra: string): { b: number; c: number; slot: number } {
    this.offsets.set(n, this.out.length);
    this.put(`${n} 0 obj\n<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter ${subFilter} /M (D:20260101000000Z)${extra} `);
    const slot = this.out.length;
    this.put('/ByteRange [0 0000000000 0000000000 0000000000] /Contents <');
    const b = this.out.length - 1;
    this.put('0'.repeat(SIGNATURE_HEX));
    this.put('> >>\nendobj\n');
    return { b, c: b + SIGNATURE_HEX + 2, slot };
  }
}

/** Fills in a signature `Writer.signature` placed: its /ByteRange over the file as it is, and the CMS of `id`. */
async function sign(pdf: Buffer, id: SigningIdentity, sig: { b: number; c: number; slot: number }): Promise<Buffer> {
  const out = Buffer.from(pdf);
  const { b, c } = sig;
  const d = out.length - c;
  out.write(
    `/ByteRange [0 ${String(b).padStart(10, '0')} ${String(c).padStart(10, '0')} ${String(d).padStart(10, '0')}]`,
    sig.slot,
    'latin1',
  );
  const digest = createHash('sha256')
    .update(out.subarray(0, b))
    .update(out.subarray(c, c + d))
    .digest();
  const cms = contentInfoDer(await signCms(id, { type: OID.data, digest }, [id.certificate]));
  out.write(cms.toString('hex').padEnd(SIGNATURE_HEX, '0'), b + 1, 'latin1');
  return out;
}

/** Room for a CMS with one certificate, hex-encoded. */
const SIGNATURE_HEX = 12_288;

interface HandOptions {
  /** More catalog, form and signature dictionary entries, and more trailer entries. */
  catalog?: string;
  form?: string;
  sig?: string;
  subFilter?: string;
  trailer?: string;
  /** Written in the head (after the catalog), in the middle (between two paddings the one pass does not hold), and in the tail. */
  head?: (w: Writer) => void;
  middle?: (w: Writer) => void;
  tail?: (w: Writer) => void;
  /** Writes the revision's cross-reference and startxref (one table by default). */
  xref?: (w: Writer, size: number) => void;
}

/**
 * A one-revision PDF sealed by `id`, written by hand: catalog 5 (a form, 6, whose one field, 7, holds the seal, 8),
 * pages 1, page 2, content 3 ("Pay Bob 100 EUR"), font 4, and 100 KB of padding (9 and 10) the one pass does not hold.
 */
async function sealedByHand(id: SigningIdentity, o: HandOptions = {}): Promise<Buffer> {
  const w = new Writer();
  w.put('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n');
  w.obj(5, `<< /Type /Catalog /Pages 1 0 R /AcroForm 6 0 R${o.catalog ?? ''} >>`);
  o.head?.(w);
  w.obj(1, '<< /Type /Pages /Kids [2 0 R] /Count 1 >>');
  w.obj(2, '<< /Type /Page /Parent 1 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>');
  w.stream(3, '', 'BT /F1 24 Tf 72 700 Td (Pay Bob 100 EUR) Tj ET');
  w.obj(4, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  w.stream(9, '', Buffer.alloc(50_000, 0x20));
  o.middle?.(w);
  w.stream(10, '', Buffer.alloc(50_000, 0x20));
  w.obj(6, `<< /Fields [7 0 R] /SigFlags 3${o.form ?? ''} >>`);
  w.obj(7, '<< /FT /Sig /T (Seal) /V 8 0 R /Type /Annot /Subtype /Widget /F 132 /Rect [0 0 0 0] /P 2 0 R >>');
  o.tail?.(w);
  const sig = w.signature(8, o.subFilter ?? '/ETSI.CAdES.detached', o.sig ?? '');
  const size = Math.max(...w.offsets.keys()) + 1;
  if (o.xref) o.xref(w, size);
  else w.table([...w.offsets.keys()], `/Size ${size} /Root 5 0 R${o.trailer ?? ''}`);
  return sign(w.out, id, sig);
}

/** `pdf` with an update appended: `objects` written in order, a table listing each, chained to the revision before. */
function appended(pdf: Buffer, objects: [number, string][], root: number, trailer = ''): Buffer {
  const prev = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(pdf.toString('latin1'))![1]);
  const w = new Writer();
  w.out = Buffer.from(pdf);
  for (const [num, body] of objects) w.obj(num, body);
  const size = Math.max(...objects.map(([n]) => n + 1), Number(/\/Size (\d+)/.exec(pdf.toString('latin1', prev))![1]));
  w.table(
    objects.map(([n]) => n),
    `/Size ${size} /Root ${root} 0 R /Prev ${prev}${trailer}`,
  );
  return w.out;
}

describe('a sealed revision is read as a reader reads it, by its cross-reference, whole or in one pass', () => {
  let id: SigningIdentity;
  let anchors: pkijs.Certificate[];
  beforeAll(async () => {
    const ca = await createCertificateAuthority({ O: 'review', CN: 'review CA' }, at);
    id = await loadSigningIdentity(await issueSigningCertificate(ca, { O: 'review', CN: 'review seal' }, at), [ca.certificate]);
    anchors = parseCertificates(ca.certificate);
  });
  /** A /DSS added after the seal, as B-LT adds one: what makes the old check read the sealed revision with pdf-lib. */
  const withDss = (pdf: Buffer, catalog: string) =>
    appended(
      pdf,
      [
        [5, catalog.replace(/>>$/, '/DSS 20 0 R >>')],
        [20, '<< /Type /DSS >>'],
      ],
      5,
    );
  const refused = async (pdf: Buffer, reason: RegExp) => {
    for (const check of await bothChecks(pdf, anchors)) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE' });
      expect(check.problems.join('; ')).toMatch(reason);
    }
  };
  const catalog = '<< /Type /Catalog /Pages 1 0 R /AcroForm 6 0 R >>';

  it('reads a sound one, alone and with a /DSS after it', async () => {
    const sealed = await sealedByHand(id);
    for (const pdf of [sealed, withDss(sealed, catalog)]) for (const check of await bothChecks(pdf, anchors)) sound(check);
  });

  it.each([
    ['head', 'head'],
    ['middle', 'middle'],
    ['tail', 'tail'],
  ] as const)(
    'a shadowed catalog: the signed revision defines 5 0 obj twice (its table names the first, pdf-lib takes the second, in the %s) and is refused, alone and after an update',
    async (_, where) => {
      // The second catalog points at other pages, which say something else; its table lists them, unused.
      const shadow = (w: Writer) => {
        w.obj(5, '<< /Type /Catalog /Pages 11 0 R /AcroForm 6 0 R >>', false);
        w.obj(11, '<< /Type /Pages /Kids [12 0 R] /Count 1 >>');
        w.obj(12, '<< /Type /Page /Parent 11 0 R /MediaBox [0 0 612 792] /Contents 13 0 R /Resources << /Font << /F1 4 0 R >> >> >>');
        w.stream(13, '', 'BT /F1 24 Tf 72 700 Td (Pay Mallory 1,000,000 EUR) Tj ET');
      };
      const sealed = await sealedByHand(id, { [where]: shadow });
      // The two readings the forgery played on: pdf-lib's (the last definition) and a reader's (the table's).
      const lib = await PDFDocument.load(sealed, { updateMetadata: false });
      expect(lib.catalog.get(PDFName.of('Pages'))!.toString()).toBe('11 0 R');
      const rev = findSeal(wholePdf(sealed));
      expect(rev).toHaveProperty('seal');
      for (const pdf of [sealed, withDss(sealed, catalog)]) await refused(pdf, /object 5 is defined twice in one revision/);
    },
  );

  it.each([
    ['in the head', { head: (w: Writer) => w.obj(30, '(hidden)', false) }],
    ['in the middle', { middle: (w: Writer) => w.obj(30, '(hidden)', false) }],
    [
      'in an object stream no cross-reference reads from',
      { tail: (w: Writer) => w.stream(30, '/Type /ObjStm /N 1 /First 5', '31 0 (hidden)') },
    ],
  ] as const)(
    'objects outside any xref: bytes of the signed revision that define an object no cross-reference lists (%s) are refused',
    async (_, o) => {
      const sealed = await sealedByHand(id, o);
      await refused(sealed, /outside every cross-reference section|no cross-reference section reads from/);
      await refused(withDss(sealed, catalog), /outside every cross-reference section|no cross-reference section reads from/);
    },
  );

  it('a hybrid-reference file (/XRefStm in its trailer) is refused', async () => {
    const sealed = await sealedByHand(id, { trailer: ' /XRefStm 9' });
    await refused(sealed, /names a cross-reference stream \(\/XRefStm\): a hybrid-reference file/);
  });

  it('an encrypted file (/Encrypt in a trailer, sealed or in an update) is refused', async () => {
    const encrypted = await sealedByHand(id, { trailer: ' /Encrypt << /Filter /Standard /V 1 /R 2 /O <00> /U <00> /P -4 >>' });
    await refused(encrypted, /names \/Encrypt: the file is encrypted/);
    const later = appended(
      await sealedByHand(id),
      [
        [20, '<< /Type /DSS >>'],
        [5, catalog.replace(/>>$/, '/DSS 20 0 R >>')],
      ],
      5,
      ' /Encrypt 20 0 R',
    );
    await refused(later, /the update's trailer sets \/Encrypt/);
  });

  it('a /Prev chain that loops is refused', async () => {
    const sealed = await sealedByHand(id, {
      xref: (w, size) => {
        // Two tables, each naming the other as the one before it.
        const first = w.out.length;
        const second = first + 20_000; // where the second table will stand, once the first is padded to it
        w.table([...w.offsets.keys()], `/Size ${size} /Root 5 0 R /Prev ${second}`, false);
        w.put(`%${' '.repeat(second - w.out.length - 2)}\n`);
        w.table([], `/Size ${size} /Root 5 0 R /Prev ${first}`);
      },
    });
    await refused(sealed, /the cross-reference sections' \/Prev chain loops back to byte \d+/);
  });

  it('a /Prev that points outside the file is refused', async () => {
    const sealed = await sealedByHand(id, { trailer: ' /Prev 987654321' });
    await refused(sealed, /a cross-reference offset \(987654321\) points outside the file/);
  });

  it('a seal whose /SubFilter is /adbe.pkcs7.detached (not PAdES baseline) is refused', async () => {
    await refused(
      await sealedByHand(id, { subFilter: '/adbe.pkcs7.detached' }),
      /the seal's \/SubFilter is \/adbe\.pkcs7\.detached: a PAdES baseline seal is \/ETSI\.CAdES\.detached/,
    );
  });

  it('a seal that certifies with DocMDP /P 1 is honoured: a /DSS may still follow it (ISO 32000-2, PAdES); nothing else may', async () => {
    const certified = await sealedByHand(id, {
      catalog: ' /Perms << /DocMDP 8 0 R >>',
      sig: ' /Reference [<< /Type /SigRef /TransformMethod /DocMDP /TransformParams << /Type /TransformParams /P 1 /V /1.2 >> >>]',
    });
    const cat = '<< /Type /Catalog /Pages 1 0 R /AcroForm 6 0 R /Perms << /DocMDP 8 0 R >> >>';
    const lta = withDss(certified, cat);
    for (const check of await bothChecks(lta, anchors)) sound(check);
    const found = findSeal(wholePdf(lta));
    if (!('seal' in found)) throw new Error(found.problem);
    expect((await readLongTermData(wholePdf(lta), found.seal)).certification).toEqual({
      signature: { num: 8, gen: 0 },
      permissions: 1,
      bySeal: true,
    });
    await refused(appended(lta, [[3, '<< /Length 0 >>\nstream\n\nendstream']], 5), /changes object 3, which the seal covers/);
  });

  it('a seal after a certification that allows no change (DocMDP /P 1 by an earlier signature) is refused', async () => {
    const certified = await sealedByHand(id, {
      catalog: ' /Perms << /DocMDP 8 0 R >>',
      sig: ' /Reference [<< /Type /SigRef /TransformMethod /DocMDP /TransformParams << /P 1 >> >>]',
    });
    // The seal, in a revision of its own after the certification: a field appended to the form, and its signature.
    const prev = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(certified.toString('latin1'))![1]);
    const w = new Writer();
    w.out = Buffer.from(certified);
    w.obj(6, '<< /Fields [7 0 R 21 0 R] /SigFlags 3 >>');
    w.obj(21, '<< /FT /Sig /T (Seal 2) /V 22 0 R /Type /Annot /Subtype /Widget /F 132 /Rect [0 0 0 0] /P 2 0 R >>');
    const sig = w.signature(22, '/ETSI.CAdES.detached', '');
    w.table([6, 21, 22], `/Size 23 /Root 5 0 R /Prev ${prev}`);
    const sealed = await sign(w.out, id, sig);
    await refused(sealed, /certified allowing no change \(DocMDP \/P 1, signature object 8\), and the seal's revision changes it/);
  });
});

/**
 * A one-revision PDF sealed by `id` whose cross-reference is a stream (PDF 1.5: /W, /Index, FlateDecode with a PNG
 * predictor), with the catalog, pages, form and field inside an object stream. `stray`: the object stream also
 * holds an object its cross-reference does not read from it.
 */
async function sealedWithStreams(id: SigningIdentity, stray = false): Promise<Buffer> {
  const w = new Writer();
  w.put('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n');
  const inside: [number, string][] = [
    [5, '<< /Type /Catalog /Pages 1 0 R /AcroForm 6 0 R >>'],
    [1, '<< /Type /Pages /Kids [2 0 R] /Count 1 >>'],
    [2, '<< /Type /Page /Parent 1 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>'],
    [4, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'],
    [6, '<< /Fields [7 0 R] /SigFlags 3 >>'],
    [7, '<< /FT /Sig /T (Seal) /V 8 0 R /Type /Annot /Subtype /Widget /F 132 /Rect [0 0 0 0] /P 2 0 R >>'],
    ...(stray ? ([[12, '(a stray object)']] as [number, string][]) : []),
  ];
  let body = '';
  const header: string[] = [];
  for (const [num, text] of inside) {
    header.push(`${num} ${body.length}`);
    body += `${text}\n`;
  }
  const first = header.join(' ').length + 1;
  w.stream(
    11,
    `/Type /ObjStm /N ${inside.length} /First ${first} /Filter /FlateDecode`,
    deflateSync(Buffer.from(`${header.join(' ')}\n${body}`, 'latin1')),
  );
  w.stream(3, '', 'BT /F1 24 Tf 72 700 Td (Pay Bob 100 EUR) Tj ET');
  w.stream(9, '', Buffer.alloc(100_000, 0x20));
  const sig = w.signature(8, '/ETSI.CAdES.detached', '');
  const xrefAt = w.out.length;
  // Rows of /W [1 4 2], PNG "Up" predicted (each row minus the one above).
  const rows: number[][] = [];
  for (let num = 0; num <= 13; num++) {
    const index = inside.findIndex(([n]) => n === num && n !== 12);
    const row =
      index < 0 && !w.offsets.has(num) && num !== 13
        ? [0, 0, 0, 0, 0, 0xff, 0xff]
        : index >= 0
          ? [2, 0, 0, 0, 11, 0, index]
          : [1, ...[24, 16, 8, 0].map((s) => ((num === 13 ? xrefAt : w.offsets.get(num)!) >> s) & 0xff), 0, 0];
    rows.push(row);
  }
  const predicted = rows.flatMap((row, y) => [2, ...row.map((v, x) => (v - (y > 0 ? rows[y - 1]![x]! : 0)) & 0xff)]);
  w.stream(
    13,
    '/Type /XRef /Size 14 /W [1 4 2] /Root 5 0 R /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 7 >>',
    deflateSync(Buffer.from(predicted)),
  );
  w.put(`startxref\n${xrefAt}\n%%EOF\n`);
  return sign(w.out, id, sig);
}

describe('a sealed revision with a cross-reference stream and object streams (PDF 1.5)', () => {
  it('is read through its stream and object stream, sealed alone and at B-LTA with updates written as cross-reference streams', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-forgery-streams-'));
    const sandbox = await SandboxSeal.open(dir);
    const ca = parseCertificates(sandbox.caCertificate);
    const id = await loadSigningIdentity(
      { certificate: await readFile(join(dir, 'seal.pem'), 'utf8'), privateKey: await readFile(join(dir, 'seal.key'), 'utf8') },
      [sandbox.caCertificate],
    );
    const sealed = await sealedWithStreams(id);
    for (const check of await bothChecks(sealed, ca)) sound(check);
    // @libpdf/core appends the validation data and the document time-stamp as updates with cross-reference streams.
    const lta = await sandbox.archiveTimestamp(sealed);
    expect(lta.toString('latin1', sealed.length)).toMatch(/\/Type \/XRef/);
    // The one pass holds the seal and everything after it (the time-stamp's placeholder is large): a tail of 96 KiB.
    for (const check of await bothChecks(lta, ca, 96 * 1024)) {
      sound(check);
      expect(check.level).not.toBeNull();
    }
    const found = findSeal(wholePdf(lta));
    if (!('seal' in found)) throw new Error(found.problem);
    const read = await readLongTermData(wholePdf(lta), found.seal);
    expect(read.documentTimestamps).toHaveLength(1);
    expect(read.dss.crls.length + read.dss.ocsps.length).toBeGreaterThan(0);
  });

  it('is refused when its object stream holds an object the cross-reference stream does not read from it', async () => {
    const ca = await createCertificateAuthority({ O: 'review', CN: 'review CA' }, at);
    const id = await loadSigningIdentity(await issueSigningCertificate(ca, { O: 'review', CN: 'review seal' }, at), [ca.certificate]);
    for (const check of await bothChecks(await sealedWithStreams(id, true), parseCertificates(ca.certificate))) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE' });
      expect(check.problems.join()).toMatch(
        /object stream 11 \(at byte \d+\) holds object 12, which no cross-reference section reads from it/,
      );
    }
  });
});

describe('an update after the seal that changes what a reader shows of the form or the catalog', () => {
  let seal: SandboxSeal;
  let anchors: pkijs.Certificate[];
  let sealed: Buffer;
  let root: number;
  let form: number;
  beforeAll(async () => {
    seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-forgery-form-')));
    anchors = parseCertificates(seal.caCertificate);
    // A document with a form that asks readers to draw its fields (/NeedAppearances), with a default appearance and
    // resources, and a catalog string with two spaces in it: sealed at B-LTA by the sandbox.
    const doc = await PDFDocument.load(await bulkyPdf(1000));
    const acroForm = doc.context.obj({ Fields: [], NeedAppearances: true, DA: PDFString.of('/Helv 0 Tf 0 g'), DR: { Font: {} } });
    doc.catalog.set(PDFName.of('AcroForm'), doc.context.register(acroForm));
    doc.catalog.set(PDFName.of('Lang'), PDFString.of('en  US'));
    sealed = await seal.seal(Buffer.from(await doc.save({ useObjectStreams: false })), 'genuine', at);
    const final = await PDFDocument.load(sealed);
    root = (final.context.trailerInfo.Root as PDFRef).objectNumber;
    form = (final.catalog.get(PDFName.of('AcroForm')) as PDFRef).objectNumber;
  });
  /** The latest form or catalog as the sealed file has it, as PDF text, with `change` made to it. */
  const rewritten = async (num: number, change: (d: PDFDict) => void) => {
    const doc = await PDFDocument.load(sealed);
    const dict = doc.context.lookup(PDFRef.of(num), PDFDict);
    change(dict);
    return dict.toString();
  };

  it('the sandbox keeps the form’s /NeedAppearances, /DA and /DR through B-LTA, and the seal holds', async () => {
    for (const check of await bothChecks(sealed, anchors)) sound(check);
    const found = findSeal(wholePdf(sealed));
    if (!('seal' in found)) throw new Error(found.problem);
    expect((await readLongTermData(wholePdf(sealed), found.seal)).documentTimestamps).toHaveLength(1);
  });

  it.each(['NeedAppearances', 'DA', 'DR'])(
    'an update removing /%s from the form is refused (every key of the sealed form must stay)',
    async (key) => {
      const body = await rewritten(form, (d) => d.delete(PDFName.of(key)));
      for (const check of await bothChecks(appended(sealed, [[form, body]], root), anchors)) {
        expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE' });
        expect(check.problems.join()).toMatch(new RegExp(`an update after the seal removes the form's /${key}`));
      }
    },
  );

  it('an update changing /NeedAppearances from true to false is refused', async () => {
    const body = await rewritten(form, (d) => d.set(PDFName.of('NeedAppearances'), d.context.obj(false)));
    for (const check of await bothChecks(appended(sealed, [[form, body]], root), anchors))
      expect(check.problems.join()).toMatch(/changes the form's \/NeedAppearances/);
  });

  it('a whitespace-only edit inside a catalog string ((en  US) to (en US)) is refused: strings compare by their bytes', async () => {
    const body = await rewritten(root, (d) => d.set(PDFName.of('Lang'), PDFString.of('en US')));
    for (const check of await bothChecks(appended(sealed, [[root, body]], root), anchors)) {
      expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE' });
      expect(check.problems.join()).toMatch(/an update after the seal changes the catalog's \/Lang/);
    }
    // The same string written another way (an octal escape for the space) is the same string: accepted.
    const same = (await rewritten(root, () => undefined)).replace('(en  US)', '(en\\040 US)');
    expect(same).toContain('(en\\040 US)');
    for (const check of await bothChecks(appended(sealed, [[root, same]], root), anchors)) sound(check);
  });

  it('an update adding a key to the catalog, or raising /SigFlags past 3, is refused', async () => {
    const body = await rewritten(root, (d) => d.set(PDFName.of('OpenAction'), d.context.obj([2, PDFName.of('Fit')])));
    for (const check of await bothChecks(appended(sealed, [[root, body]], root), anchors))
      expect(check.problems.join()).toMatch(/adds \/OpenAction to the catalog/);
    const flags = await rewritten(form, (d) => d.set(PDFName.of('SigFlags'), d.context.obj(7)));
    for (const check of await bothChecks(appended(sealed, [[form, flags]], root), anchors))
      expect(check.problems.join()).toMatch(/sets the form's \/SigFlags to 7/);
  });
});
