/**
 * Fetching a completed transaction's archive from a backend on another machine: the signed ZIP and its
 * `manifest.json` (docs/evidence.md, "The manifest"), from the archive store the result names (`file://` on a
 * machine that shares the workers' disk, `s3://` otherwise), checked against the result before they are kept.
 */
import { createHash, randomUUID } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArchiveManifest } from '../archive/manifest.js';
import type { ArchiveResult } from '../definitions/transaction.js';
import { collectAtMost, ObjectRefused } from '../storage/object-store.js';
import { S3HttpClient, type S3ObjectReader } from '../storage/s3-http.js';

/** A manifest lists an archive's files and evidence: far below this, however large the archive. */
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;

/** An archive `downloadArchive` would not keep: nothing archived, a ZIP or manifest that is not the result's, or none. */
export class ArchiveDownloadRefused extends Error {
  override readonly name = 'ArchiveDownloadRefused';
  constructor(
    message: string,
    readonly reason: 'not_archived' | 'unsupported_uri' | 'missing' | 'manifest_mismatch' | 'zip_mismatch',
  ) {
    super(message);
  }
}

export interface DownloadArchiveOptions {
  /**
   * The files' base name in `dir`: `<name>.zip` and `<name>.manifest.json`. Default: the archive's own names,
   * `completed.zip` and `manifest.json` (those docs/evidence.md's auditor recipe uses).
   */
  name?: string;
  /**
   * Reads `s3://` archives. Default: `S3HttpClient.fromEnv(env)`, configured like the workers
   * (`ESIGN_ARCHIVE_S3_ENDPOINT`, `ESIGN_ARCHIVE_S3_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).
   */
  s3?: S3ObjectReader;
  /** Where the default S3 reader takes its settings (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

export interface DownloadedArchive {
  /** The path of the ZIP written. */
  zip: string;
  /** The path of its manifest, as the store holds it, byte for byte. */
  manifest: string;
  sha256: string;
  bytes: number;
  /** The manifest's content. */
  contents: ArchiveManifest;
}

/**
 * Writes the archived ZIP of a completed transaction and its `manifest.json` into `dir` (created if need be), and
 * returns their paths. The manifest must be the one of the result's ZIP (same SHA-256), and the ZIP's bytes must
 * hash to it; otherwise `ArchiveDownloadRefused` and nothing is left in `dir`. Each file appears whole or not at
 * all (written beside, then renamed).
 */
export async function downloadArchive(
  result: { archive?: ArchiveResult | undefined },
  dir: string,
  options: DownloadArchiveOptions = {},
): Promise<DownloadedArchive> {
  const archive = result.archive;
  if (!archive) throw new ArchiveDownloadRefused('the transaction has no archive (it did not complete)', 'not_archived');
  const source = sourceOf(archive.uri, options);
  const name = options.name ?? 'completed';
  if (options.name !== undefined && (name === '' || basename(name) !== name || name.startsWith('.'))) {
    throw new RangeError(`name must be a plain file name, not ${JSON.stringify(options.name)}`);
  }
  const zipPath = join(dir, options.name === undefined ? 'completed.zip' : `${name}.zip`);
  const manifestPath = join(dir, options.name === undefined ? 'manifest.json' : `${name}.manifest.json`);

  const manifestBytes = await source.manifest().catch((err: unknown) => {
    if (err instanceof ObjectRefused) throw new ArchiveDownloadRefused(`${archive.uri}: ${err.message}`, 'manifest_mismatch');
    throw err;
  });
  if (!manifestBytes) throw new ArchiveDownloadRefused(`${archive.uri}: the archive has no manifest.json beside the ZIP`, 'missing');
  let contents: ArchiveManifest;
  try {
    contents = JSON.parse(manifestBytes.toString('utf8')) as ArchiveManifest;
  } catch {
    throw new ArchiveDownloadRefused(`${archive.uri}: its manifest.json is not JSON`, 'manifest_mismatch');
  }
  if (contents?.zip?.sha256 !== archive.sha256) {
    throw new ArchiveDownloadRefused(
      `${archive.uri}: the manifest beside it is for another ZIP (sha256 ${String(contents?.zip?.sha256)}, the result says ${archive.sha256})`,
      'manifest_mismatch',
    );
  }

  await mkdir(dir, { recursive: true });
  const partial = (path: string) => join(dirname(path), `.${basename(path)}.${randomUUID()}.partial`);
  const zipPartial = partial(zipPath);
  const manifestPartial = partial(manifestPath);
  try {
    const zip = await source.zip();
    if (!zip) throw new ArchiveDownloadRefused(`${archive.uri}: the archive's ZIP is missing`, 'missing');
    // Written no further than the result's size: a longer ZIP is not the result's, and would only fill the disk.
    const written = await writeHashed(zip, zipPartial, archive.bytes);
    if (written.sha256 !== archive.sha256 || written.bytes !== archive.bytes) {
      throw new ArchiveDownloadRefused(
        `${archive.uri}: the ZIP read has ${written.sha256 === undefined ? `over ${archive.bytes} bytes` : `SHA-256 ${written.sha256} (${written.bytes} bytes)`}, not the archived ${archive.sha256} ` +
          `(${archive.bytes} bytes): it was altered or damaged, and is not kept`,
        'zip_mismatch',
      );
    }
    await writeFile(manifestPartial, manifestBytes);
    await rename(zipPartial, zipPath);
    await rename(manifestPartial, manifestPath);
    return { zip: zipPath, manifest: manifestPath, sha256: archive.sha256, bytes: written.bytes, contents };
  } finally {
    await rm(zipPartial, { force: true });
    await rm(manifestPartial, { force: true });
  }
}

interface ArchiveSource {
  zip(): Promise<AsyncIterable<Uint8Array> | undefined>;
  manifest(): Promise<Buffer | undefined>;
}

/** Where the ZIP and its manifest are: `…/<key>/completed.zip` and `…/<key>/manifest.json`, in a directory or a bucket. */
function sourceOf(uri: string, options: DownloadArchiveOptions): ArchiveSource {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new ArchiveDownloadRefused(`not an archive URI: ${uri}`, 'unsupported_uri');
  }
  // Not quoted: what a result never holds, and would be a secret in a message.
  if (url.username || url.password) throw new ArchiveDownloadRefused('an archive URI with credentials is refused', 'unsupported_uri');
  if (!url.pathname.endsWith('/completed.zip')) {
    throw new ArchiveDownloadRefused(`${uri}: an archive's ZIP is named completed.zip`, 'unsupported_uri');
  }
  if (url.protocol === 'file:') {
    let path: string;
    try {
      path = fileURLToPath(url);
    } catch {
      throw new ArchiveDownloadRefused(`${uri}: not a file on this machine`, 'unsupported_uri');
    }
    const manifest = join(dirname(path), 'manifest.json');
    return {
      zip: async () => (await openedFile(path, 'zip_mismatch'))?.createReadStream(),
      async manifest() {
        const handle = await openedFile(manifest, 'manifest_mismatch');
        if (!handle) return undefined;
        try {
          return await collectAtMost(handle.createReadStream({ autoClose: false }), 'manifest.json', MAX_MANIFEST_BYTES);
        } finally {
          await handle.close();
        }
      },
    };
  }
  if (url.protocol === 's3:') {
    const bucket = url.hostname;
    const key = decodeURIComponent(url.pathname.slice(1));
    // `%2F..%2F` decodes to segments a URL (the package's S3 client's) would resolve to another object or bucket.
    if (key.split('/').some((segment) => segment === '.' || segment === '..'))
      throw new ArchiveDownloadRefused(`${uri}: an archive's key has no . or .. segment`, 'unsupported_uri');
    const reader = options.s3 ?? S3HttpClient.fromEnv(options.env);
    return {
      zip: () => reader.getObject(bucket, key),
      async manifest() {
        const stream = await reader.getObject(bucket, `${key.slice(0, -'completed.zip'.length)}manifest.json`);
        return stream && (await collectAtMost(stream, 'manifest.json', MAX_MANIFEST_BYTES));
      },
    };
  }
  throw new ArchiveDownloadRefused(`cannot download from ${url.protocol} archives (file: and s3: only)`, 'unsupported_uri');
}

function absent(err: NodeJS.ErrnoException): undefined {
  if (err.code === 'ENOENT') return undefined;
  throw err;
}

/**
 * Opened first, so that a missing file is told as missing rather than failing the stream; without waiting on a
 * FIFO, and only if it is a regular file (a FIFO or a device would never end).
 */
async function openedFile(path: string, reason: ArchiveDownloadRefused['reason']): Promise<FileHandle | undefined> {
  const handle = await open(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK).catch(absent);
  if (handle && !(await handle.stat()).isFile()) {
    await handle.close();
    throw new ArchiveDownloadRefused(`${path} is not a regular file`, reason);
  }
  return handle;
}

/**
 * Streams into a new file, hashing the bytes as they are written, and stops past `maxBytes` (then `sha256` is
 * undefined): what is longer than the result's ZIP is not it.
 */
async function writeHashed(
  stream: AsyncIterable<Uint8Array>,
  path: string,
  maxBytes: number,
): Promise<{ sha256: string | undefined; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const out = await open(path, 'wx');
  try {
    for await (const chunk of stream) {
      bytes += chunk.length;
      if (bytes > maxBytes) return { sha256: undefined, bytes }; // leaving the loop destroys the stream
      hash.update(chunk);
      await out.write(chunk);
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return { sha256: hash.digest('hex'), bytes };
}
