// Hostile completed ZIPs served by the provider, end to end through the
// workflow: each is refused with a clear, non-retryable failure, and nothing
// is written in the archive or anywhere outside it.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { renameZipEntry, writeZip } from '../support/zip.js';

let env: EsignTestEnv;
let pdf: Buffer;
let scratch: string;

beforeAll(async () => {
  env = await startEsignTestEnv();
  pdf = Buffer.from(await samplePdf('Signed'));
  scratch = dirname(env.pdfs[0]!);
});
afterAll(() => env?.close());

/** Every file under a directory, recursively, as relative paths. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

const hostile: [string, () => Promise<Buffer>, RegExp][] = [
  [
    'a ../ path',
    async () => {
      const path = await writeZip(join(scratch, 'dotdot.zip'), [
        { name: 'a.pdf', data: pdf },
        { name: 'xx/evil.pdf', data: pdf },
      ]);
      await renameZipEntry(path, 'xx/evil.pdf', '../evil.pdf');
      return readFile(path);
    },
    /invalid relative path|unsafe entry name/,
  ],
  [
    'an absolute path',
    async () => {
      const path = await writeZip(join(scratch, 'absolute.zip'), [
        { name: 'a.pdf', data: pdf },
        { name: 'tmp/evil.pdf', data: pdf },
      ]);
      await renameZipEntry(path, 'tmp/evil.pdf', '/tm/evil.pdf');
      return readFile(path);
    },
    /absolute path|unsafe entry name/,
  ],
  [
    'a symbolic link',
    async () =>
      readFile(
        await writeZip(join(scratch, 'link.zip'), [
          { name: 'a.pdf', data: pdf },
          { name: 'b.pdf', data: Buffer.from('/etc/passwd'), mode: 0o120777 },
        ]),
      ),
    /symbolic link/,
  ],
  [
    'duplicate names',
    async () =>
      readFile(
        await writeZip(join(scratch, 'dupes.zip'), [
          { name: 'a.pdf', data: pdf },
          { name: 'A.pdf', data: pdf },
        ]),
      ),
    /duplicate entry name/,
  ],
  [
    'a compression bomb',
    async () =>
      readFile(
        await writeZip(join(scratch, 'bomb.zip'), [
          { name: 'a.pdf', data: pdf },
          { name: 'b.pdf', data: Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(64 * 1024 * 1024)]), compress: true },
        ]),
      ),
    /compression bomb/,
  ],
  [
    'a corrupt central directory',
    async () => {
      const good = await readFile(
        await writeZip(join(scratch, 'corrupt.zip'), [
          { name: 'a.pdf', data: pdf },
          { name: 'b.pdf', data: pdf },
        ]),
      );
      good.writeUInt32LE(0xdeadbeef, good.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])));
      return good;
    },
    /corrupt|not a readable/,
  ],
];

describe('archive safety, end to end', () => {
  it.each(hostile)(
    'refuses a completed ZIP with %s, non-retryably, writes nothing, and holds the transaction for an operator',
    async (_name, build, reason) => {
      const zip = await build();
      const before = await filesUnder(env.archiveDir);
      const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
      let transactionId: string | null = null;
      await expect.poll(async () => (transactionId = (await handle.query(statusQuery)).transactionId), { timeout: 20_000 }).not.toBeNull();

      // The provider completes the transaction with the hostile ZIP; the workflow finds out by reconciliation.
      await env.sandbox.control.completeWithZip(transactionId!, zip);

      // Refused for good (no retry would change the ZIP): the transaction waits in archive_invalid for an operator.
      const held = await waitForPhase(handle, 'archive_invalid');
      expect(held.archiveProblem).toMatch(/^ArchiveInvalid: completed ZIP rejected/);
      expect(held.archiveProblem).toMatch(reason);
      await handle.terminate('test done');

      // No archive for it, no scratch left behind, and nothing where the hostile names point.
      expect(await filesUnder(env.archiveDir)).toEqual(before);
      expect(await filesUnder(join(env.archiveDir, '.staging'))).toEqual([]);
      for (const target of [join(dirname(env.archiveDir), 'evil.pdf'), '/tm/evil.pdf', join(env.archiveDir, 'evil.pdf')])
        expect(existsSync(target)).toBe(false);
    },
  );
});
