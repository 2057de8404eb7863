// pyHanko as an independent judge of a batch of PDFs (test/validators/pyhanko_batch.py through
// test/support/pyhanko.ts): AdES LTA validation, revocation required, offline, one Python process.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFArray, PDFDocument, PDFName, type PDFRef } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { validateWithPyhanko, type PyhankoVerdict } from '../support/pyhanko.js';

let dir: string;
let seal: SandboxSeal;
let verdicts: Map<string, PyhankoVerdict>;

/** One byte of the sealed revision changed: the document's creation year in its /Info (1970 -> 1971). */
function changeSignedByte(sealed: Buffer): Buffer {
  const at = sealed.indexOf('/CreationDate (D:1970');
  expect(at).toBeGreaterThan(0);
  const tampered = Buffer.from(sealed);
  tampered[at + '/CreationDate (D:197'.length] = '1'.charCodeAt(0);
  return tampered;
}

/** An incremental update after the seal (and its LTA revisions) that gives the first page other content. */
async function changePageAfterSeal(sealed: Buffer): Promise<Buffer> {
  const doc = await PDFDocument.load(sealed, { updateMetadata: false });
  const contents = doc.getPage(0).node.get(PDFName.of('Contents'));
  const content = ((contents instanceof PDFArray ? contents.get(0) : contents) as PDFRef).objectNumber;
  const text = sealed.toString('latin1');
  const prev = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(text)![1]);
  const trailers = [...text.matchAll(/trailer\s*<<([\s\S]*?)>>\s*startxref/g)];
  const last = trailers.at(-1)![1]!;
  const size = Number(/\/Size\s+(\d+)/.exec(last)![1]);
  const root = /\/Root\s+(\d+\s+\d+\s+R)/.exec(last)![1];
  const info = /\/Info\s+(\d+\s+\d+\s+R)/.exec(last)?.[1];
  const data = 'BT /F1 24 Tf 72 700 Td (Pay Mallory 1,000,000) Tj ET';
  const object = `${content} 0 obj\n<< /Length ${data.length} >>\nstream\n${data}\nendstream\nendobj\n`;
  const objectAt = sealed.length + 1;
  const xrefAt = objectAt + object.length;
  const entry = (offset: number, free = false) => `${String(offset).padStart(10, '0')} ${free ? '65535 f' : '00000 n'} \n`;
  const update =
    `\n${object}xref\n0 1\n${entry(0, true)}${content} 1\n${entry(objectAt)}` +
    `trailer\n<< /Size ${size} /Root ${root}${info ? ` /Info ${info}` : ''} /Prev ${prev} >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return Buffer.concat([sealed, Buffer.from(update, 'latin1')]);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'esign-pyhanko-batch-test-'));
  seal = await SandboxSeal.open(join(dir, 'pki'));
  const genuine = await seal.seal(await samplePdf('Employment contract'), 'Signed by every participant', new Date());
  const files: Array<[string, Buffer]> = [
    ['genuine.pdf', genuine],
    ['not-a-pdf.pdf', Buffer.from('PK\u0003\u0004 this is a ZIP, or rather not even that\n')],
    ['one-byte-changed.pdf', changeSignedByte(genuine)],
    ['page-changed-after-seal.pdf', await changePageAfterSeal(genuine)],
  ];
  for (const [name, bytes] of files) await writeFile(join(dir, name), bytes);
  verdicts = await validateWithPyhanko(
    files.map(([name]) => join(dir, name)),
    seal.caCertificate,
  );
}, 180_000);
afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

describe('pyHanko, judging a batch in one process (AdES LTA, revocation required, offline)', () => {
  it('gives one verdict per file, the unreadable one included', () => {
    expect([...verdicts.keys()]).toEqual(['genuine.pdf', 'not-a-pdf.pdf', 'one-byte-changed.pdf', 'page-changed-after-seal.pdf']);
  });

  it('accepts a genuine sandbox seal (PAdES B-LTA) with TOTAL_PASSED, its document time-stamp too', () => {
    const v = verdicts.get('genuine.pdf')!;
    expect(v, v.reasons.join('; ')).toMatchObject({
      accepted: true,
      indication: 'TOTAL_PASSED',
      subIndication: null,
      reasons: [],
      warnings: [],
    });
    expect(v.signatures.map(({ kind, indication, subIndication, level }) => ({ kind, indication, subIndication, level }))).toEqual([
      { kind: 'signature', indication: 'TOTAL_PASSED', subIndication: null, level: 'B-LTA' },
      { kind: 'timestamp', indication: 'TOTAL_PASSED', subIndication: null, level: 'DOCUMENT_TIMESTAMP' },
    ]);
    expect(v.signatures[0]!.id).toBe('Signature1');
    const [sealReport, timestamp] = v.report.signatures;
    expect(sealReport).toMatchObject({
      kind: 'signature',
      sub_filter: 'ETSI.CAdES.detached',
      intact: true,
      valid: true,
      trusted: true,
      coverage: 'ENTIRE_REVISION',
      modification_level: 'LTA_UPDATES',
      docmdp_ok: true,
      bottom_line: true,
      signature_timestamp: { indication: 'TOTAL_PASSED', trusted: true },
    });
    expect(timestamp).toMatchObject({ kind: 'document_timestamp', sub_filter: 'ETSI.RFC3161', intact: true, trusted: true });
    expect(timestamp!.modification_level === 'LTA_UPDATES' || timestamp!.coverage === 'ENTIRE_FILE').toBe(true);
  });

  it('refuses the same file with one signed byte changed: the seal and the time-stamp no longer match their bytes', () => {
    const v = verdicts.get('one-byte-changed.pdf')!;
    expect(v).toMatchObject({ accepted: false, indication: 'TOTAL_FAILED', subIndication: 'HASH_FAILURE' });
    expect(v.signatures.map((s) => s.subIndication)).toEqual(['HASH_FAILURE', 'HASH_FAILURE']);
    expect(v.reasons.join('\n')).toMatch(/Signature1: not intact/);
  });

  it('refuses a file that is not a PDF, with a reason, and judges the files after it', () => {
    const v = verdicts.get('not-a-pdf.pdf')!;
    expect(v).toMatchObject({ accepted: false, indication: 'ERROR', signatures: [] });
    expect(v.reasons.join()).toMatch(/^refused: .*header/i);
    expect(verdicts.get('page-changed-after-seal.pdf')!.report.verdict).not.toMatch(/^refused/);
  });

  it("refuses a page changed by an update appended after the seal: pyHanko's difference analysis finds OTHER", () => {
    const v = verdicts.get('page-changed-after-seal.pdf')!;
    expect(v.accepted).toBe(false);
    const sealReport = v.report.signatures.find((s) => s.id === 'Signature1')!;
    expect(sealReport).toMatchObject({
      intact: true,
      valid: true,
      coverage: 'ENTIRE_REVISION',
      modification_level: 'OTHER',
      docmdp_ok: false,
    });
    expect(v.reasons.join('\n')).toMatch(/Signature1: modified after signing: OTHER/);
  });
});
