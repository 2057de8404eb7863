import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { ZipFile } from 'yazl';
import { beforeAll, describe, expect, it } from 'vitest';
import { StreamingZipVerifier, type StreamVerdict } from '../../src/archive/zip-stream.js';
import { DEFAULT_ZIP_LIMITS, holdWhole, UnsafeZipError, verifyZip, type EntryInspector } from '../../src/archive/zip-verify.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { renameZipEntry, writeZip, type ZipEntrySpec } from '../support/zip.js';

let dir: string;
let pdf: Buffer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zip-stream-'));
  pdf = Buffer.from(await samplePdf('Signed'));
});

/** A ZIP written from streams: yazl then puts each entry's CRC-32 and sizes in a data descriptor after its data. */
async function streamedZip(name: string, entries: ZipEntrySpec[]): Promise<string> {
  const path = join(dir, name);
  const zip = new ZipFile();
  for (const e of entries) zip.addReadStream(Readable.from([e.data]), e.name, { compress: e.compress ?? false, mode: 0o100644 });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
  return path;
}

/** Feeds the file to the verifier in chunks of `size` bytes, as a download would, then finishes. */
async function streamVerify(path: string, size: number, inspector?: EntryInspector): Promise<StreamVerdict> {
  const bytes = await readFile(path);
  const verifier = new StreamingZipVerifier(DEFAULT_ZIP_LIMITS, inspector);
  for (let at = 0; at < bytes.length; at += size) await verifier.update(bytes.subarray(at, at + size));
  return verifier.finish(path);
}

const CHUNKS = [1, 5, 17, 4096, 1 << 20];

/**
 * A PDF whose bytes hold a data-descriptor signature with the right sizes for what precedes it; with
 * `matching`, the right CRC-32 too, which makes its own first part look like a whole entry.
 */
function decoyPdf(matching = false): Buffer {
  const body = Buffer.concat([pdf, Buffer.from([0x50, 0x4b, 0x07, 0x08])]);
  const fields = Buffer.alloc(12);
  fields.writeUInt32LE((crc32(body.subarray(0, pdf.length)) ^ (matching ? 0 : 1)) >>> 0, 0);
  fields.writeUInt32LE(pdf.length, 4);
  fields.writeUInt32LE(pdf.length, 8);
  return Buffer.concat([body, fields, Buffer.from('\n%%EOF\n')]);
}

describe('StreamingZipVerifier', () => {
  it('verifies in the download pass exactly what verifyZip verifies, at any chunk boundary', async () => {
    const zips = [
      await writeZip(join(dir, 'known-sizes.zip'), [
        { name: 'a.pdf', data: pdf },
        { name: 'b.pdf', data: pdf, compress: true },
        { name: 'audit-trail.json', data: Buffer.from('{"events":[]}') },
      ]),
      await streamedZip('descriptors.zip', [
        { name: 'a.pdf', data: pdf },
        { name: 'decoy.pdf', data: decoyPdf() },
        { name: 'empty.json', data: Buffer.from('{}') },
      ]),
    ];
    for (const path of zips) {
      const expected = await verifyZip(path);
      for (const size of CHUNKS) {
        expect(await streamVerify(path, size), `${path} in chunks of ${size}`).toEqual({ entries: expected });
      }
    }
  });

  it('shows each wanted entry to the inspector once, whole, while streaming', async () => {
    const decoy = decoyPdf();
    const path = await streamedZip('inspected.zip', [
      { name: 'a.pdf', data: pdf },
      { name: 'decoy.pdf', data: decoy },
    ]);
    const shown: [string, Buffer][] = [];
    const inspector: EntryInspector = {
      open: (name) =>
        name === 'decoy.pdf'
          ? holdWhole(async (entry, content) => {
              shown.push([entry.name, Buffer.from(content)]);
            })
          : undefined,
    };
    await streamVerify(path, 7, inspector);
    expect(shown).toEqual([['decoy.pdf', decoy]]);
  });

  it('refuses an ambiguous entry (one holding a valid descriptor of its own start), which a sequential reader would cut short', async () => {
    const path = await streamedZip('ambiguous.zip', [{ name: 'a.pdf', data: decoyPdf(true) }]);
    for (const size of CHUNKS) {
      const verdict = await streamVerify(path, size).catch((e: unknown) => e);
      expect(verdict, `in chunks of ${size}`).toBeInstanceOf(UnsafeZipError);
      expect((verdict as Error).message).toMatch(/entry "a.pdf" holds a data descriptor of its own first \d+ bytes/);
    }
    await expect(verifyZip(path)).rejects.toThrow(/entry "a.pdf" holds a data descriptor of its own first \d+ bytes/);
  });

  it('says to verify the file itself when an entry is deflated with its sizes after the data', async () => {
    const path = await streamedZip('deflated-descriptor.zip', [{ name: 'a.pdf', data: pdf, compress: true }]);
    expect((await streamVerify(path, 4096)) as { fallback?: string }).toHaveProperty(
      'fallback',
      expect.stringMatching(/deflated with its sizes after the data/) as string,
    );
    expect(await verifyZip(path)).toHaveLength(1);
  });

  it('refuses a corrupted entry, a central directory that disagrees with the entries, and everything verifyZip refuses', async () => {
    // As the archive activity does: what the stream cannot follow is verified from the file.
    const verify = async (path: string, size: number) => {
      const verdict = await streamVerify(path, size);
      return 'entries' in verdict ? verdict.entries : verifyZip(path);
    };
    const refused = async (path: string, reason: RegExp) => {
      for (const size of [3, 4096]) {
        const err = await verify(path, size).catch((e: unknown) => e);
        expect(err, `${path} in chunks of ${size}`).toBeInstanceOf(UnsafeZipError);
        expect((err as Error).message).toMatch(reason);
      }
    };
    // One byte changed inside a stored entry (with a data descriptor, and with known sizes).
    for (const path of [
      await streamedZip('flip-descriptor.zip', [{ name: 'a.pdf', data: pdf }]),
      await writeZip(join(dir, 'flip-known.zip'), [{ name: 'a.pdf', data: pdf }]),
    ]) {
      const bytes = await readFile(path);
      bytes[bytes.indexOf('%PDF-') + 200]! ^= 0xff;
      await writeFile(path, bytes);
      await refused(path, /CRC-32|does not match/);
    }
    // The central directory claims another CRC-32 than the entry carries.
    const lying = await writeZip(join(dir, 'lying-directory.zip'), [{ name: 'a.pdf', data: pdf }]);
    const bytes = await readFile(lying);
    const central = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    bytes.writeUInt32LE((bytes.readUInt32LE(central + 16) ^ 1) >>> 0, central + 16);
    await writeFile(lying, bytes);
    await refused(lying, /does not match the entry in the file/);

    const dotdot = await writeZip(join(dir, 'dotdot.zip'), [{ name: 'xx/evil.pdf', data: pdf }]);
    await renameZipEntry(dotdot, 'xx/evil.pdf', '../evil.pdf');
    await refused(dotdot, /invalid relative path|unsafe entry name/);
    await refused(await writeZip(join(dir, 'nested.zip'), [{ name: 'sub/a.pdf', data: pdf }]), /unsafe entry name/);
    await refused(
      await writeZip(join(dir, 'dupes.zip'), [
        { name: 'a.pdf', data: pdf },
        { name: 'A.pdf', data: pdf },
      ]),
      /duplicate entry name/,
    );
    await refused(await streamedZip('text.zip', [{ name: 'a.pdf', data: Buffer.from('hello') }]), /not a PDF/);
    await refused(
      await writeZip(join(dir, 'symlink.zip'), [{ name: 'link.pdf', data: Buffer.from('/etc/passwd'), mode: 0o120777 }]),
      /symbolic link/,
    );
    const bomb = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(20 * 1024 * 1024)]);
    await refused(await writeZip(join(dir, 'bomb.zip'), [{ name: 'bomb.pdf', data: bomb, compress: true }]), /compression bomb/);
  });

  it('leaves a download cut short to the second pass, which refuses it', async () => {
    const path = await streamedZip('cut.zip', [{ name: 'a.pdf', data: pdf }]);
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(Object.keys(await streamVerify(path, 4096))).toEqual(['fallback']);
    await expect(verifyZip(path)).rejects.toThrow(/not a readable|corrupt/);
  });
});
