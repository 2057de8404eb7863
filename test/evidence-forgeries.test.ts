// Forgeries a review of the seal check found, each kept as a regression test: a check must refuse them whether it
// holds the PDF whole or reads it in the one pass a large file gets (src/evidence/pdf-stream.ts). Each is built
// from real parts: a CA and seal of our own (src/evidence/pki.ts) or the sandbox's seal, and @signpdf to place a
// CMS in a PDF as a signer would.
import { createHash } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import * as asn1js from 'asn1js';
import type { PDFRef } from 'pdf-lib';
import { PDFArray, PDFDocument, PDFName, StandardFonts } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { beforeAll, describe, expect, it } from 'vitest';
import { contentInfoDer, OID, signCms } from '../src/evidence/cms.js';
import { checkPdfSignature, type PdfSignatureCheck } from '../src/evidence/pades-verify.js';
import { StreamedPdf } from '../src/evidence/pdf-stream.js';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  parseCertificates,
  type SigningIdentity,
} from '../src/evidence/pki.js';
import { SandboxSeal } from '../src/sandbox/seal.js';
import { bulkyPdf } from './support/bulky-pdf.js';
import { trustAnchorsOnly } from '../src/evidence/trust.js';

const at = new Date();

/** Both checks' verdicts: the whole file, and one pass holding little of it. */
async function bothChecks(pdf: Buffer, anchors: pkijs.Certificate[]): Promise<PdfSignatureCheck[]> {
  const pass = new StreamedPdf({ holdWhole: 0, head: 20 * 1024, tail: 48 * 1024 });
  for (let i = 0; i < pdf.length; i += 65_536) pass.update(pdf.subarray(i, i + 65_536));
  return [await checkPdfSignature(pdf, trustAnchorsOnly(anchors), at), await checkPdfSignature(pass.bytes(), trustAnchorsOnly(anchors), at)];
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
  // The seal, appended as an incremental update.
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
    `xref\n0 1\n${entry(0, true)}9 1\n${entry(sigAt)}trailer\n<< /Size 10 /Root 1 0 R /Prev ${firstXref} >>\nstartxref\n${sealXref}\n%%EOF\n`,
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
    `xref\n0 1\n${entry(0, true)}5 1\n${entry(offsets[5]!)}trailer\n<< /Size 10 /Root 1 0 R /Prev ${sealXref} >>\nstartxref\n${lastXref}\n%%EOF\n`,
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

  it.each(['xrefstm', 'prev-real', 'prev-ref', 'dangling'] as const)(
    'is refused when the sealed revision hides the object (%s)',
    async (variant) => {
      const { sealed, tampered } = await sealedThenChanged(id, variant);
      for (const check of await bothChecks(sealed, anchors)) expect(check.problems).toEqual([]);
      for (const check of await bothChecks(tampered, anchors)) {
        expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE', coversWholeFile: false });
        expect(check.problems.join()).toMatch(/added after signing/);
      }
    },
  );

  it.each([
    ['leading zeros', '0000000000005 0 R'],
    ['a comment between its parts', '5 0%note\nR'],
    ['no space before R', '5 0R'],
    ["white space across the one pass's chunks", `5${' '.repeat(100_000)}0 R`],
  ])('is refused when the sealed page refers to the object it fills in, written with %s', async (_, reference) => {
    const { sealed, tampered } = await sealedThenChanged(id, 'dangling', reference);
    for (const check of await bothChecks(sealed, anchors)) expect(check.problems).toEqual([]);
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
