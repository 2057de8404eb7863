// A large PDF's seals are checked in the one pass that downloads it (src/evidence/pdf-stream.ts): the digests of
// the spans its /ByteRanges name are taken as the bytes stream past, and only its head and tail are held. These
// tests hold that pass to the whole-file check: the same verdict on real sealed PDFs (B-LTA, from the sandbox's
// seal) at any chunking, a changed byte in the part not held still found, and what the pass cannot read refused
// with its reason, never passed.
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { evidenceCheck, type EvidencePolicy } from '../../src/archive/evidence.js';
import { StreamingZipVerifier } from '../../src/archive/zip-stream.js';
import { DEFAULT_ZIP_LIMITS } from '../../src/archive/zip-verify.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { StreamedPdf, type StreamedPdfOptions } from '../../src/evidence/pdf-stream.js';
import { parseCertificates } from '../../src/evidence/pki.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { seededRandom } from '../../src/util/seeded-random.js';
import { bulkyPdf } from '../support/bulky-pdf.js';
import { forgeCompletedZip, sha256 } from '../support/evidence.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

const SMALL: StreamedPdfOptions = { holdWhole: 512 * 1024, head: 64 * 1024, tail: 256 * 1024 };

/** `bytes` through a pass in chunks of random sizes (1 byte to `largest`), fixed by `seed`. */
function pass(bytes: Buffer, seed: number, options: StreamedPdfOptions = SMALL, largest = 65_536): StreamedPdf {
  const random = seededRandom(seed);
  const streamed = new StreamedPdf(options);
  for (let at = 0; at < bytes.length;) {
    const n = 1 + Math.floor(random() ** 3 * largest);
    streamed.update(bytes.subarray(at, at + n));
    at += n;
  }
  return streamed;
}

const hashOf = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();

/** Random bytes, `least` to `least + spread` of them, drawn from `random`. */
function randomFile(random: () => number, least: number, spread: number): Buffer {
  const file = Buffer.alloc(least + Math.floor(random() * spread));
  for (let i = 0; i < file.length; i++) file[i] = Math.floor(random() * 256);
  return file;
}

describe('one pass over a stream: span digests', () => {
  it('gives the SHA-256 of every span named in time, at any chunking, and refuses one named too late', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = seededRandom(seed);
      const file = randomFile(random, 300_000, 50_000);
      const spans: [number, number, number][] = [];
      const write = (at: number, b: number, c: number, d: number) => {
        const text = Buffer.from(`/ByteRange [0 ${b} ${c} ${d}]`);
        text.copy(file, at);
        spans.push([b, c, d]);
      };
      // Named before its b (the usual order: /ByteRange, then /Contents), and after its /Contents within the tail.
      const b1 = 100_000 + Math.floor(random() * 50_000);
      write(b1 - 500, b1, b1 + 9_000, file.length - b1 - 9_000);
      const b2 = 200_000 + Math.floor(random() * 20_000);
      write(b2 + 12_000, b2, b2 + 10_000, 3_000);
      // Named more than the tail window after its b: the pass cannot have its digest.
      const late = 20_000;
      write(late + 250_000, late, late + 100, 50);
      const streamed = pass(file, seed, { holdWhole: 0, head: 4096, tail: 64 * 1024 });
      expect(streamed.sha256()).toBe(createHash('sha256').update(file).digest('hex'));
      const bytes = streamed.bytes();
      for (const [b, c, d] of spans.slice(0, 2)) {
        expect(bytes.span(b, c, d)('SHA-256'), `seed ${seed}`).toEqual(hashOf(file.subarray(0, b), file.subarray(c, c + d)));
      }
      expect(() => bytes.span(late, late + 100, 50)('SHA-256')).toThrow(/written more than 64 KiB after the signature value/);
      // Only SHA-256 is taken in the pass: another algorithm is refused, not computed over bytes not held.
      expect(() => bytes.span(b1, b1 + 9_000, file.length - b1 - 9_000)('SHA-512')).toThrow(/checked in one pass, with SHA-256/);
      expect(bytes.slice(150_000, 150_001)).toBeUndefined();
    }
  });
});

describe('one pass over a stream: chunks larger than what it holds', () => {
  it('hashes, digests and keeps the tail the same when a chunk is longer than the tail window and the ring', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = seededRandom(seed);
      const file = randomFile(random, 1_500_000, 100_000);
      const b = 600_000 + Math.floor(random() * 100_000);
      const [c, d] = [b + 5_000, 200_000];
      Buffer.from(`/ByteRange [0 ${b} ${c} ${d}]`).copy(file, b - 300);
      // Chunks of up to 400 KiB: past the 8 KiB tail window and the ring behind it.
      const streamed = pass(file, seed, { holdWhole: 0, head: 4096, tail: 8 * 1024 }, 400_000);
      expect(streamed.sha256(), `seed ${seed}`).toBe(createHash('sha256').update(file).digest('hex'));
      const bytes = streamed.bytes();
      expect(bytes.span(b, c, d)('SHA-256'), `seed ${seed}`).toEqual(hashOf(file.subarray(0, b), file.subarray(c, c + d)));
      expect(bytes.slice(file.length - 8 * 1024, file.length)).toEqual(file.subarray(file.length - 8 * 1024));
      expect(bytes.slice(0, 4096)).toEqual(file.subarray(0, 4096));
      expect(bytes.slice(file.length - 8 * 1024 - 1, file.length)).toBeUndefined();
    }
  });
});

describe('one pass over a stream: references read across the switch from holding the file to the ring', () => {
  it('reads a reference whose parts straddle the switch as a whole-file scan does', () => {
    const file = Buffer.alloc(200_000, 0x20);
    Buffer.from('7 0').copy(file, 40_000);
    file[100_000] = 0x52; // "R", 60,000 bytes of white space after "7 0"
    const streamed = new StreamedPdf({ holdWhole: 64 * 1024, head: 4096, tail: 8 * 1024 });
    for (const [a, b] of [
      [0, 50_000],
      [50_000, 100_000],
      [100_000, 200_000],
    ] as const)
      streamed.update(file.subarray(a, b));
    streamed.sha256();
    expect(streamed.bytes().maxReferenceBefore(file.length)).toBe(7);
  });
});

describe('one pass over a large sealed PDF (B-LTA, from the sandbox seal)', () => {
  let seal: SandboxSeal;
  let anchors: ReturnType<typeof parseCertificates>;
  let sealed: Buffer;
  /** The time of checking: once the seal and its validation data exist (an OCSP response or CRL is not from the future). */
  let at: Date;

  beforeAll(async () => {
    seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-one-pass-')));
    anchors = parseCertificates(seal.caCertificate);
    sealed = await seal.seal(await bulkyPdf(4 * 2 ** 20), 'Signed by every participant', new Date());
    at = new Date();
  });

  it('judges as the whole-file check, at any chunking, holding only its head and tail', async () => {
    const whole = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), at);
    expect(whole).toMatchObject({ indication: 'TOTAL_PASSED', level: 'B-LTA', problems: [] });
    for (const seed of [1, 2, 3]) {
      const streamed = pass(sealed, seed);
      expect(streamed.sha256()).toBe(sha256(sealed));
      const bytes = streamed.bytes();
      expect(bytes.partial).toBe(true);
      expect(bytes.slice(2 * 2 ** 20, 2 * 2 ** 20 + 1), 'the middle of the file is not held').toBeUndefined();
      expect(await checkPdfSignature(bytes, trustAnchorsOnly(anchors), at)).toEqual(whole);
    }
  });

  it('finds a byte changed in the part it does not hold', async () => {
    const changed = Buffer.from(sealed);
    changed[2 * 2 ** 20] = changed[2 * 2 ** 20]! ^ 0x01;
    const check = await checkPdfSignature(pass(changed, 7).bytes(), trustAnchorsOnly(anchors), at);
    expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'HASH_FAILURE', signatureValid: false });
    expect(check).toMatchObject({ indication: (await checkPdfSignature(changed, trustAnchorsOnly(anchors), at)).indication });
  });

  it('refuses, with its reason, a file whose seal and validation data do not fit in what it holds', async () => {
    const check = await checkPdfSignature(
      pass(sealed, 4, { holdWhole: 0, head: 1024, tail: 8 * 1024 }).bytes(),
      trustAnchorsOnly(anchors),
      at,
    );
    expect(check.indication).not.toBe('TOTAL_PASSED');
    expect(check.problems.join('; ')).toMatch(/the first 1 KiB and the last \d+ KiB of its 4 MiB, all a check of a file this large reads/);
  });

  it('is what the archive runs on a large document in the download pass, and its verdict is recorded', async () => {
    const original = await bulkyPdf(3 * 2 ** 20);
    const zip = await forgeCompletedZip({
      seal,
      transaction: { id: 'tx-large', esignId: 'es-large' },
      documents: [{ title: 'Agreement', StoragePath: 'uploads/agreement.pdf', original }],
    });
    const path = join(await mkdtemp(join(tmpdir(), 'esign-one-pass-zip-')), 'completed.zip');
    await writeFile(path, zip);
    const policy: EvidencePolicy = { signatures: 'require', trust: trustAnchorsOnly(anchors), requireCompletionCertificate: true };
    const check = evidenceCheck(
      {
        transactionId: 'tx-large',
        esignId: 'es-large',
        documents: [{ title: 'Agreement', StoragePath: 'uploads/agreement.pdf', sha256: sha256(original) }],
      },
      policy,
      () => new Date(),
      SMALL,
    );
    const verifier = new StreamingZipVerifier(DEFAULT_ZIP_LIMITS, check.inspector);
    for (let i = 0; i < zip.length; i += 100_000) await verifier.update(zip.subarray(i, i + 100_000));
    const verdict = await verifier.finish(path);
    if (!('entries' in verdict)) throw new Error(`fell back: ${verdict.fallback}`);
    const evidence = check.conclude(verdict.entries);
    expect(evidence.documents[0]!.signature).toMatchObject({ result: 'valid', trusted: true, validation: { level: 'B-LTA' } });
    expect(evidence.documents[0]!.finalSha256).toBe(verdict.entries.find((e) => e.name === 'Agreement.pdf')!.sha256);
  });
});
