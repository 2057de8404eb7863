// Completed ZIPs forged so that a reader going by the central directory (the archive's manifest, yauzl, Python's
// zipfile) and one walking the local headers (`jar x` from a pipe, bsdtar, any streaming extractor) would see
// different files. Each is refused on both of the archive's paths: the download pass (StreamingZipVerifier, falling
// back to verifyZip as the archive activity does) and verifyZip reading the file on its own.
import { spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, deflateRawSync } from 'node:zlib';
import { ZipFile } from 'yazl';
import { beforeAll, describe, expect, it } from 'vitest';
import { StreamingZipVerifier, type StreamVerdict } from '../../src/archive/zip-stream.js';
import { DEFAULT_ZIP_LIMITS, nameProblem, UnsafeZipError, verifyZip, type VerifiedEntry } from '../../src/archive/zip-verify.js';
import { zipEntryName } from '../../packages/sandbox/src/zip.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { readZipEntries, writeRawZip, writeZip, type RawZipEntry, type RawZipOptions } from '../support/zip.js';

let dir: string;
/** Stands for a sealed document. */
let sealed: Buffer;
/** Stands for the unsealed document a forger would have an extractor write in its place. */
let forged: Buffer;
const trail = Buffer.from('{"events":[]}');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zip-forgeries-'));
  sealed = Buffer.from(await samplePdf('Sealed contract'));
  forged = Buffer.from(await samplePdf('Unsealed forgery'));
});

let count = 0;
const zipOf = (entries: RawZipEntry[], options?: RawZipOptions) => writeRawZip(join(dir, `forgery-${++count}.zip`), entries, options);

/** Feeds the file to the download pass in chunks of `size` bytes, then finishes. */
async function streamVerify(path: string, size: number): Promise<StreamVerdict> {
  const bytes = await readFile(path);
  const verifier = new StreamingZipVerifier(DEFAULT_ZIP_LIMITS);
  for (let at = 0; at < bytes.length; at += size) await verifier.update(bytes.subarray(at, at + size));
  return verifier.finish(path);
}

/** As the archive activity verifies a completed ZIP: in the download pass, and from the file when the pass says so. */
async function archiveVerify(path: string, size: number): Promise<VerifiedEntry[]> {
  const verdict = await streamVerify(path, size);
  return 'entries' in verdict ? verdict.entries : verifyZip(path);
}

const CHUNKS = [3, 4096, 1 << 20];

/** Refused with `reason` by verifyZip (the fallback path), and by the archive's path (`onStream`, if it says otherwise) at any chunk size. */
async function refused(path: string, reason: RegExp, onStream: RegExp = reason): Promise<void> {
  const alone = await verifyZip(path).catch((e: unknown) => e);
  expect(alone, `verifyZip ${path}`).toBeInstanceOf(UnsafeZipError);
  expect((alone as Error).message).toMatch(reason);
  for (const size of CHUNKS) {
    const err = await archiveVerify(path, size).catch((e: unknown) => e);
    expect(err, `${path} in chunks of ${size}`).toBeInstanceOf(UnsafeZipError);
    expect((err as Error).message).toMatch(onStream);
  }
}

/** Accepted alike by both paths, at any chunk size. */
async function accepted(path: string): Promise<VerifiedEntry[]> {
  const entries = await verifyZip(path);
  for (const size of CHUNKS) expect(await archiveVerify(path, size), `${path} in chunks of ${size}`).toEqual(entries);
  return entries;
}

const hasJar = spawnSync('jar', ['--version']).status === 0;

/**
 * What `jar x` writes reading the ZIP from a pipe, as a streaming extractor does: local header after local header.
 * (`jar xf file` reads the central directory instead, on JDK 17.)
 */
async function sequentialExtract(path: string): Promise<Map<string, Buffer>> {
  const out = await mkdtemp(join(dir, 'jar-'));
  const run = spawnSync('jar', ['xv'], { cwd: out, input: await readFile(path), encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  const files = new Map<string, Buffer>();
  for (const name of ['Contract.pdf', 'audit-trail.json']) files.set(name, await readFile(join(out, name)));
  return files;
}

/** A deflated entry with a data descriptor: a layout the download pass leaves to verifyZip. */
const fallbackFirst = (): RawZipEntry => ({ name: 'Contract.pdf', data: sealed, compress: true, descriptor: true });

describe('ZIP forgeries', () => {
  it("the test ZIP writer's honest ZIPs are accepted on both paths (so a refusal below is the forgery's)", async () => {
    for (const layout of [
      [{ name: 'Contract.pdf', data: sealed }],
      [{ name: 'Contract.pdf', data: sealed, compress: true }],
      [{ name: 'Contract.pdf', data: sealed, descriptor: true }],
      [fallbackFirst()],
      [fallbackFirst(), { name: 'Appendix.pdf', data: forged }, { name: 'audit-trail.json', data: trail, descriptor: true }],
    ] satisfies RawZipEntry[][]) {
      const entries = await accepted(await zipOf(layout));
      expect(entries.map((e) => e.name)).toEqual(layout.map((e) => e.name));
    }
  });

  it('an entry hidden from the central directory is refused on the fallback path (a sequential extractor would write it)', async () => {
    // The sealed Contract.pdf, deflated with a data descriptor (the download pass falls back to verifyZip), then an
    // unsealed Contract.pdf the central directory does not list, then the audit trail.
    const path = await zipOf([
      fallbackFirst(),
      { name: 'Contract.pdf', data: forged, hidden: true },
      { name: 'audit-trail.json', data: trail },
    ]);

    // What the directory shows (all that verifyZip used to read, and what the manifest would record): the sealed one.
    expect((await readZipEntries(path)).get('Contract.pdf')).toEqual(sealed);
    // The download pass cannot follow this layout: the file is verified by verifyZip, the path under test.
    expect(await streamVerify(path, 4096)).toHaveProperty(
      'fallback',
      expect.stringMatching(/deflated with its sizes after the data/) as string,
    );
    // A sequential extractor writes the sealed Contract.pdf, then the hidden one over it.
    if (hasJar) {
      const extracted = await sequentialExtract(path);
      expect(extracted.get('Contract.pdf')).toEqual(forged);
      expect(extracted.get('audit-trail.json')).toEqual(trail);
    } else console.warn('jar not found: the sequential extraction is not shown');

    await refused(path, /entry "Contract.pdf" \(at byte \d+\) is hidden from the central directory/);

    // Hidden before the first listed entry, or after the last, the same.
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: forged, hidden: true }, fallbackFirst(), { name: 'audit-trail.json', data: trail }]),
      /hidden from the central directory/,
    );
    await refused(
      await zipOf([fallbackFirst(), { name: 'audit-trail.json', data: trail }, { name: 'Contract.pdf', data: forged, hidden: true }]),
      /hidden from the central directory/,
    );
  });

  it('an entry hidden from the central directory is refused on the stream path too', async () => {
    for (const layout of [
      [
        { name: 'Contract.pdf', data: sealed },
        { name: 'Contract.pdf', data: forged, hidden: true },
        { name: 'audit-trail.json', data: trail },
      ],
      [
        { name: 'Other.pdf', data: forged, hidden: true },
        { name: 'Contract.pdf', data: sealed },
      ],
      [
        { name: 'Contract.pdf', data: sealed },
        { name: 'Other.pdf', data: forged, hidden: true },
      ],
    ] satisfies RawZipEntry[][]) {
      const path = await zipOf(layout);
      expect(Object.keys(await streamVerify(path, 4096).catch(() => ({ refused: true })))).toEqual(['refused']);
      await refused(path, /hidden from the central directory/, /hidden from the central directory|duplicate entry name/);
    }
  });

  it('bytes before the first entry are refused (a stub the offsets count, a prefix they do not, a hidden local entry)', async () => {
    const stub = Buffer.from('#!/bin/sh\nexec unzip "$0"\n');
    const before = new RegExp(`${stub.length} bytes before the first entry`);
    await refused(await zipOf([{ name: 'Contract.pdf', data: sealed, before: stub }]), before, /bytes before the first entry/);
    await refused(await zipOf([{ ...fallbackFirst(), before: stub }]), before);
    // `cat stub.sh completed.zip`: the directory's offsets do not count the stub.
    const plain = await readFile(await writeZip(join(dir, 'plain.zip'), [{ name: 'Contract.pdf', data: sealed }]));
    const prefixed = join(dir, 'prefixed.zip');
    await writeFile(prefixed, Buffer.concat([stub, plain]));
    await refused(prefixed, before);
    // A prefix that is itself an entry.
    await refused(
      await zipOf([
        { name: 'Forged.pdf', data: forged, hidden: true },
        { name: 'Contract.pdf', data: sealed },
      ]),
      /entry "Forged.pdf" \(at byte 0\) is hidden from the central directory/,
    );
  });

  it('bytes between entries are refused (and between the last entry and the central directory)', async () => {
    const junk = Buffer.from('\n%%EOF\n');
    await refused(
      await zipOf([
        { name: 'Contract.pdf', data: sealed },
        { name: 'audit-trail.json', data: trail, before: junk },
      ]),
      /7 bytes between entries "Contract.pdf" and "audit-trail.json"/,
      /bytes between entries/,
    );
    await refused(
      await zipOf([fallbackFirst(), { name: 'audit-trail.json', data: trail, before: junk }]),
      /7 bytes between entries "Contract.pdf" and "audit-trail.json"/,
    );
    await refused(
      await zipOf([fallbackFirst(), { name: 'audit-trail.json', data: trail }], { beforeDirectory: junk }),
      /7 bytes between the last entry \("audit-trail.json"\) and the central directory/,
    );
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed }], { beforeDirectory: junk }),
      /7 bytes between the last entry \("Contract.pdf"\) and the central directory/,
    );
  });

  it('a local header whose name, flags, sizes or CRC-32 differ from its directory entry is refused', async () => {
    const cases: [RawZipEntry['local'], RegExp][] = [
      // A sequential extractor would write Forged.pdf; the directory says Contract.pdf.
      [{ name: 'Forged.pdf' }, /does not match the entry in the file: name "Contract.pdf" there, "Forged.pdf" in its local header/],
      [{ flags: 0 }, /does not match the entry in the file: flags 0x00000800 there, 0x00000000 in its local header/],
      [{ crc: 0x12345678 }, /does not match the entry in the file: CRC-32 0x[0-9a-f]{8} there, 0x12345678 in its local header/],
      [
        { compressedSize: 100, uncompressedSize: 100 },
        /does not match the entry in the file: compressed size \d+ there, 100 in its local header/,
      ],
      [{ method: 8 }, /does not match the entry in the file: compression method 0 there, 8 in its local header/],
    ];
    for (const [local, reason] of cases) {
      // First, where the download pass reads it; and after an entry the pass leaves to verifyZip.
      await refused(await zipOf([{ name: 'Contract.pdf', data: sealed, local }]), reason);
      await refused(
        await zipOf([
          { ...fallbackFirst(), name: 'Appendix.pdf' },
          { name: 'Contract.pdf', data: sealed, local },
        ]),
        reason,
      );
    }
    // With a data descriptor, the header's zeros may stand for the sizes, but no other values.
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed, descriptor: true, local: { uncompressedSize: 12 } }]),
      /does not match the entry in the file: size \d+ there, 12 in its local header/,
    );
  });

  it('a data descriptor that disagrees with the central directory, or is missing, is refused', async () => {
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed, descriptor: true, descriptorFields: { crc: 0x12345678 } }]),
      /the data descriptor of entry "Contract.pdf" disagrees with the central directory/,
    );
    await refused(
      await zipOf([{ ...fallbackFirst(), descriptorFields: { uncompressedSize: sealed.length - 1 } }]),
      /the data descriptor of entry "Contract.pdf" disagrees with the central directory/,
    );
    await refused(
      await zipOf([
        { ...fallbackFirst(), descriptorFields: { compressedSize: 10 } },
        { name: 'audit-trail.json', data: trail },
      ]),
      /the data descriptor of entry "Contract.pdf" disagrees with the central directory/,
    );
    await refused(
      await zipOf([
        { ...fallbackFirst(), descriptorRecord: Buffer.alloc(0) },
        { name: 'audit-trail.json', data: trail },
      ]),
      /entry "Contract.pdf" has no data descriptor after its data/,
    );
  });

  it('an entry listed twice in the central directory is refused', async () => {
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed, listedAgainAs: 'Appendix.pdf' }]),
      /entries "Contract.pdf" and "Appendix.pdf" of the central directory are one entry \(both at byte 0\): an entry listed twice/,
    );
    await refused(
      await zipOf([fallbackFirst(), { name: 'audit-trail.json', data: trail, listedAgainAs: 'audit-trail.json' }]),
      /duplicate entry name "audit-trail.json"/,
    );
  });

  it('two names that are one file once case-folded and NFC-normalised are refused', async () => {
    for (const [a, b] of [
      ['Vertrag-Mu\u0308ller.pdf', 'Vertrag-M\u00fcller.pdf'], // NFD and NFC
      ['STRASSE.pdf', 'stra\u00dfe.pdf'], // full case folding: ß is ss
      ['Contract.pdf', 'contract.PDF'],
      ['Contract.pdf', 'Contract.pdf.'], // Windows drops trailing dots
    ]) {
      await refused(
        await zipOf([
          { name: a!, data: sealed },
          { name: b!, data: forged },
        ]),
        /duplicate entry name/,
      );
    }
  });

  it('a trailing comment after the end record is refused (and any other bytes after it)', async () => {
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed }], { comment: Buffer.from('signed and sealed') }),
      /comment of 17 bytes/,
    );
    await refused(await zipOf([fallbackFirst()], { comment: Buffer.from('x') }), /comment of 1 bytes/);
    // As yazl writes one.
    const commented = join(dir, 'commented.zip');
    const zip = new ZipFile();
    zip.addBuffer(sealed, 'Contract.pdf', { compress: false });
    zip.end({ comment: 'hello', forceZip64Format: false });
    await pipeline(zip.outputStream, createWriteStream(commented));
    await refused(commented, /comment of 5 bytes/);
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed }], { trailer: Buffer.from('trailing') }),
      /8 bytes follow the end of central directory record/,
    );
  });

  it('a deflated entry whose deflate stream ends before its data does is refused', async () => {
    const body = Buffer.concat([deflateRawSync(sealed), Buffer.from('PK\u0003\u0004 a sequential reader looks here')]);
    await refused(
      await zipOf([{ name: 'Contract.pdf', data: sealed, compress: true, body }]),
      /deflate stream ends after \d+ of its \d+ bytes/,
    );
    await refused(
      await zipOf([
        { ...fallbackFirst(), body },
        { name: 'audit-trail.json', data: trail },
      ]),
      /deflate stream ends after \d+ of its \d+ bytes/,
    );
  });

  it('a stored entry holding a data descriptor of its own start is refused on the fallback path, as the stream refuses it', async () => {
    // A sequential reader ends a stored entry with a descriptor at the first descriptor that matches the bytes before it.
    const decoy = Buffer.alloc(12);
    decoy.writeUInt32LE(crc32(sealed), 0);
    decoy.writeUInt32LE(sealed.length, 4);
    decoy.writeUInt32LE(sealed.length, 8);
    const data = Buffer.concat([sealed, Buffer.from('PK\u0007\u0008'), decoy, forged]);
    await refused(
      await zipOf([
        { ...fallbackFirst(), name: 'Contract2.pdf' },
        { name: 'Contract.pdf', data, descriptor: true },
      ]),
      /entry "Contract.pdf" holds a data descriptor of its own first \d+ bytes/,
    );
    await refused(
      await zipOf([{ name: 'Contract.pdf', data, descriptor: true }]),
      /entry "Contract.pdf" holds a data descriptor of its own first \d+ bytes/,
    );
  });

  it('reads ZIP64 (end record and locator, extended sizes, 8-byte data descriptors) alike on both paths', async () => {
    // All stored (the download pass reads it through), then with a deflated entry and a descriptor (verifyZip does).
    for (const compress of [false, true]) {
      const path = join(dir, `zip64-${compress}.zip`);
      const zip = new ZipFile();
      zip.addBuffer(sealed, 'Contract.pdf', { compress: false, forceZip64Format: true });
      zip.addReadStream(Readable.from([forged]), 'Appendix.pdf', { compress: false, forceZip64Format: true });
      zip.addReadStream(Readable.from([trail]), 'audit-trail.json', { compress, forceZip64Format: true });
      zip.end({ forceZip64Format: true, comment: '' });
      await pipeline(zip.outputStream, createWriteStream(path));
      expect(Object.keys(await streamVerify(path, 4096))).toEqual([compress ? 'fallback' : 'entries']);
      expect((await accepted(path)).map((e) => [e.name, e.bytes])).toEqual([
        ['Contract.pdf', sealed.length],
        ['Appendix.pdf', forged.length],
        ['audit-trail.json', trail.length],
      ]);
    }
  });
});

describe('the sandbox names its entries as the archive judges them', () => {
  it('keeps titles apart that one file system would merge (case folding, Unicode NFC), so its own ZIPs are never refused', () => {
    const taken = new Set<string>();
    const names = ['Straße', 'STRASSE', 'Cafe\u0301', 'Café'].map((t, i) => zipEntryName(t, i, taken));
    expect(names).toEqual(['Straße.pdf', 'STRASSE (2).pdf', 'Cafe\u0301.pdf', 'Café (2).pdf']);
    const seen = new Map<string, string>();
    expect(names.map((n) => nameProblem(n, seen))).toEqual([undefined, undefined, undefined, undefined]);
  });
});
