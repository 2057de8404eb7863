// Attacks on the client package's `downloadArchive(result, dir)`: a result whose archive URI points elsewhere than
// the archive store, a store (or someone who can write it) handing over more than the result's archive, and a
// `dir` prepared by someone else. Real parts: files on disk, and a real HTTP server answering as S3 would.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveDownloadRefused, downloadArchive } from '../../src/client/archive.js';
import type { ArchiveResult } from '../../src/definitions/transaction.js';
import type { S3ObjectReader } from '../../src/storage/s3-http.js';
import { StubHttpServer } from '../support/stub-http.js';

let work: string;
let stub: StubHttpServer;
const zip = Buffer.from('PK\x05\x06 the archive of a completed transaction');
const sha256 = createHash('sha256').update(zip).digest('hex');
const manifest = Buffer.from(JSON.stringify({ zip: { name: 'completed.zip', bytes: zip.length, sha256 } }));
const fifos: string[] = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'download-attacks-'));
  stub = await StubHttpServer.start();
  stub.handler = (_req, res) => {
    res.writeHead(404, { 'content-type': 'application/xml' });
    res.end('<Error><Code>NoSuchKey</Code></Error>');
  };
});
afterAll(async () => {
  for (const fifo of fifos)
    await open(fifo, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK).then(
      (h) => h.close(),
      () => undefined,
    );
  await stub?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

function resultFor(uri: string): { archive: ArchiveResult } {
  return { archive: { uri, sha256, bytes: zip.length, files: [] } };
}

/** An archive in a directory store: `<dir>/completed.zip` and its manifest, as the workers' local store keeps them. */
async function stored(name: string, files: { zip?: Buffer; manifest?: Buffer | null } = {}): Promise<string> {
  const dir = join(work, 'store', name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'completed.zip'), files.zip ?? zip);
  if (files.manifest !== null) await writeFile(join(dir, 'manifest.json'), files.manifest ?? manifest);
  return pathToFileURL(join(dir, 'completed.zip')).href;
}

async function refusal(promise: Promise<unknown>): Promise<ArchiveDownloadRefused> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArchiveDownloadRefused);
  return err as ArchiveDownloadRefused;
}

/** A reader of S3 objects that serves `bodies` and counts the bytes pulled from them. */
function counting(bodies: Record<string, () => Iterable<Buffer>>): S3ObjectReader & { pulled: Record<string, number> } {
  const pulled: Record<string, number> = {};
  return {
    pulled,
    getObject(_bucket: string, key: string) {
      const name = key.split('/').pop()!;
      const body = bodies[name];
      if (!body) return Promise.resolve(undefined);
      pulled[name] = 0;
      return Promise.resolve(
        (async function* () {
          for (const chunk of body()) {
            pulled[name]! += chunk.length;
            yield chunk;
          }
        })(),
      );
    },
  };
}

describe('where the archive is read from', () => {
  it("refuses an S3 key whose %-encoded '/..' segments would make the package's S3 client read another bucket", async () => {
    stub.requests.length = 0;
    const env = { AWS_ACCESS_KEY_ID: 'TEST', AWS_SECRET_ACCESS_KEY: 'TEST', ESIGN_ARCHIVE_S3_ENDPOINT: stub.url };
    const refused = await refusal(
      downloadArchive(resultFor('s3://esign-archive/a%2F..%2F..%2Fvictim-bucket/completed.zip'), join(work, 'out-dots'), { env }),
    );
    expect(refused.reason).toBe('unsupported_uri');
    expect(stub.requests).toEqual([]); // not GET /victim-bucket/manifest.json
  });

  it('refuses an archive URI with credentials, without repeating them', async () => {
    const refused = await refusal(
      downloadArchive(resultFor('s3://AKIAEXAMPLE:s3cr3t@esign-archive/k/completed.zip'), join(work, 'out-creds'), {
        s3: counting({}),
      }),
    );
    expect(refused.reason).toBe('unsupported_uri');
    expect(refused.message).not.toMatch(/AKIAEXAMPLE|s3cr3t/);
  });

  it('refuses a file URI naming another machine as unsupported, not with a TypeError', async () => {
    const refused = await refusal(
      downloadArchive(resultFor(`file://elsewhere${join(work, 'k', 'completed.zip')}`), join(work, 'out-host')),
    );
    expect(refused.reason).toBe('unsupported_uri');
  });

  it('holds: only file: and s3: URIs naming a completed.zip are read', async () => {
    for (const uri of ['file:///etc/passwd', 'http://169.254.169.254/latest/completed.zip', 'https://example.com/completed.zip']) {
      expect((await refusal(downloadArchive(resultFor(uri), join(work, 'out-scheme')))).reason).toBe('unsupported_uri');
    }
  });
});

describe('what the store hands over', () => {
  it("stops writing a ZIP at the result's size: a longer one is refused, and not written out whole first", async () => {
    const reader = counting({
      'manifest.json': () => [manifest],
      'completed.zip': function* () {
        for (let i = 0; i < 1024; i++) yield Buffer.alloc(64 * 1024, 0x50); // 64 MiB for a result of a few bytes
      },
    });
    const out = join(work, 'out-long');
    const refused = await refusal(downloadArchive(resultFor('s3://esign-archive/k/completed.zip'), out, { s3: reader }));
    expect(refused.reason).toBe('zip_mismatch');
    expect(reader.pulled['completed.zip']).toBeLessThan(1024 * 64 * 1024);
    expect(await readdir(out)).toEqual([]);
  });

  it('refuses a manifest over its bound (16 MiB) without reading it all', async () => {
    const reader = counting({
      'manifest.json': function* () {
        for (let i = 0; i < 1024; i++) yield Buffer.alloc(64 * 1024, 0x20); // 64 MiB of blanks
      },
      'completed.zip': () => [zip],
    });
    const refused = await refusal(downloadArchive(resultFor('s3://esign-archive/k/completed.zip'), join(work, 'out-big'), { s3: reader }));
    expect(refused.reason).toBe('manifest_mismatch');
    expect(refused.message).toMatch(/manifest\.json is over the 16777216-byte limit/);
    expect(reader.pulled['manifest.json']).toBeLessThanOrEqual(16 * 1024 * 1024 + 64 * 1024);
  });

  it('refuses a manifest.json over its bound on disk (a 3 GiB file)', async () => {
    const uri = await stored('huge-manifest');
    const path = join(work, 'store', 'huge-manifest', 'manifest.json');
    await truncate(path, 3 * 1024 ** 3); // sparse
    const refused = await refusal(downloadArchive(resultFor(uri), join(work, 'out-huge')));
    expect(refused.reason).toBe('manifest_mismatch');
    await rm(path);
  });

  it('refuses a manifest.json that is a FIFO rather than waiting on it for a writer', async () => {
    const uri = await stored('fifo', { manifest: null });
    const path = join(work, 'store', 'fifo', 'manifest.json');
    execFileSync('mkfifo', [path]);
    fifos.push(path);
    const refused = await refusal(downloadArchive(resultFor(uri), join(work, 'out-fifo')));
    expect(refused.reason).toBe('manifest_mismatch');
    expect(refused.message).toMatch(/is not a regular file/);
  });
});

describe('the directory written to', () => {
  it('holds: symbolic links planted at the output names are replaced, never written through', async () => {
    const uri = await stored('plain');
    const out = join(work, 'out-planted');
    await mkdir(out);
    const victim = join(work, 'victim.txt');
    await writeFile(victim, 'precious');
    await symlink(victim, join(out, 'completed.zip'));
    await symlink(victim, join(out, 'manifest.json'));
    const downloaded = await downloadArchive(resultFor(uri), out);
    expect(await readFile(victim, 'utf8')).toBe('precious');
    expect(await readFile(downloaded.zip)).toEqual(zip);
    expect(await readFile(downloaded.manifest)).toEqual(manifest);
  });

  it('holds: a ZIP that does not hash to the result leaves nothing, neither under its name nor half-written', async () => {
    const altered = Buffer.from(zip);
    altered[0]! ^= 0xff;
    const uri = await stored('altered', { zip: altered });
    const out = join(work, 'out-altered');
    expect((await refusal(downloadArchive(resultFor(uri), out))).reason).toBe('zip_mismatch');
    expect(await readdir(out)).toEqual([]);
  });
});
