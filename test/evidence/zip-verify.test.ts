import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ZIP_LIMITS, UnsafeZipError, verifyZip } from '../../src/archive/zip-verify.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { renameZipEntry, writeZip, type ZipEntrySpec } from '../support/zip.js';

let dir: string;
let pdf: Buffer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zip-verify-'));
  pdf = Buffer.from(await samplePdf('Signed'));
});

const zipOf = (name: string, entries: ZipEntrySpec[]) => writeZip(join(dir, name), entries);

const rejects = async (path: string, reason: RegExp) => {
  const err = await verifyZip(path).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(UnsafeZipError);
  expect((err as Error).message).toMatch(reason);
};

describe('verifyZip', () => {
  it('accepts a ZIP of PDFs and hashes each entry', async () => {
    const path = await zipOf('good.zip', [
      { name: 'a.pdf', data: pdf },
      { name: 'b.pdf', data: pdf, compress: true },
    ]);
    const entries = await verifyZip(path);
    expect(entries.map((e) => [e.name, e.bytes])).toEqual([
      ['a.pdf', pdf.length],
      ['b.pdf', pdf.length],
    ]);
    expect(entries[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('rejects ../ paths, absolute paths and directories', async () => {
    const dotdot = await zipOf('dotdot.zip', [{ name: 'xx/evil.pdf', data: pdf }]);
    await renameZipEntry(dotdot, 'xx/evil.pdf', '../evil.pdf');
    await rejects(dotdot, /invalid relative path|unsafe entry name/);
    const absolute = await zipOf('absolute.zip', [{ name: 'tmp/evil.pdf', data: pdf }]);
    await renameZipEntry(absolute, 'tmp/evil.pdf', '/tm/evil.pdf');
    await rejects(absolute, /absolute path|unsafe entry name/);
    await rejects(await zipOf('nested.zip', [{ name: 'sub/a.pdf', data: pdf }]), /unsafe entry name/);
  });

  it('rejects symbolic links, duplicate names and non-PDF entries', async () => {
    await rejects(await zipOf('symlink.zip', [{ name: 'link.pdf', data: Buffer.from('/etc/passwd'), mode: 0o120777 }]), /symbolic link/);
    await rejects(
      await zipOf('dupes.zip', [
        { name: 'a.pdf', data: pdf },
        { name: 'A.pdf', data: pdf },
      ]),
      /duplicate entry name/,
    );
    await rejects(await zipOf('text.zip', [{ name: 'a.pdf', data: Buffer.from('hello') }]), /not a PDF/);
  });

  it('rejects a compression bomb before inflating it', async () => {
    const bomb = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(20 * 1024 * 1024)]);
    await rejects(await zipOf('bomb.zip', [{ name: 'bomb.pdf', data: bomb, compress: true }]), /compression bomb/);
  });

  it('rejects a corrupt central directory and a truncated file', async () => {
    const good = await readFile(await zipOf('for-corruption.zip', [{ name: 'a.pdf', data: pdf }]));
    const corrupt = Buffer.from(good);
    const cd = corrupt.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    corrupt.writeUInt32LE(0xdeadbeef, cd); // central directory signature destroyed
    await writeFile(join(dir, 'corrupt.zip'), corrupt);
    await rejects(join(dir, 'corrupt.zip'), /corrupt|not a readable/);
    await writeFile(join(dir, 'truncated.zip'), good.subarray(0, Math.floor(good.length / 2)));
    await rejects(join(dir, 'truncated.zip'), /not a readable|corrupt/);
  });

  it('tells damage (worth another download) from a crafted ZIP (refused for good) by kind, not by message', async () => {
    const good = await readFile(await zipOf('for-damage.zip', [{ name: 'a.pdf', data: pdf, compress: true }]));
    const kindOf = async (name: string, bytes: Buffer) => {
      await writeFile(join(dir, name), bytes);
      const err = await verifyZip(join(dir, name)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnsafeZipError);
      return (err as UnsafeZipError).damaged;
    };
    expect(await kindOf('cut.zip', good.subarray(0, good.length - 40))).toBe(true);
    const flipped = Buffer.from(good);
    flipped[60] = flipped[60]! ^ 0xff; // a bit of the deflated data, garbled in transit: its CRC-32 fails
    expect(await kindOf('flipped.zip', flipped)).toBe(true);
    // Crafted: bytes after the end record, an entry escaping its folder.
    expect(await kindOf('trailing.zip', Buffer.concat([good, Buffer.from('appended')]))).toBe(false);
    const dotdot = await zipOf('dotdot-kind.zip', [{ name: 'xx/evil.pdf', data: pdf }]);
    await renameZipEntry(dotdot, 'xx/evil.pdf', '../evil.pdf');
    expect(await kindOf('dotdot-kind.zip', await readFile(dotdot))).toBe(false);
  });
});

describe("the worker's ZIP limits (ESIGN_ZIP_MAX_*)", () => {
  const base = { ESIGN_PROVIDER_TOKEN: 'token', ESIGN_SIGNATURE_VERIFICATION: 'off' };

  it('are the defaults unless set, and a ZIP beyond the ones set is refused', async () => {
    expect(workerConfigFromEnv(base).zipLimits).toEqual(DEFAULT_ZIP_LIMITS);
    const limits = workerConfigFromEnv({
      ...base,
      ESIGN_ZIP_MAX_ENTRIES: '1',
      ESIGN_ZIP_MAX_UNCOMPRESSED_BYTES: '1000000',
      ESIGN_ZIP_MAX_RATIO: '50',
    }).zipLimits;
    expect(limits).toEqual({ maxEntries: 1, maxTotalUncompressed: 1_000_000, maxRatio: 50 });
    const two = await zipOf('two-for-limits.zip', [
      { name: 'a.pdf', data: pdf },
      { name: 'b.pdf', data: pdf },
    ]);
    await expect(verifyZip(two)).resolves.toHaveLength(2);
    await expect(verifyZip(two, limits)).rejects.toBeInstanceOf(UnsafeZipError);
  });

  it('refuses a limit that is not a positive number, naming the variable', () => {
    expect(() => workerConfigFromEnv({ ...base, ESIGN_ZIP_MAX_ENTRIES: '0' })).toThrow(/ESIGN_ZIP_MAX_ENTRIES/);
    expect(() => workerConfigFromEnv({ ...base, ESIGN_ZIP_MAX_RATIO: 'many' })).toThrow(/ESIGN_ZIP_MAX_RATIO/);
  });
});
