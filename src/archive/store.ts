import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ArchiveEvidence } from './evidence.js';

/** What is kept next to each archived ZIP. */
export interface ArchiveManifest {
  referenceId: string;
  transactionId: string;
  esignId: string;
  zip: { name: string; bytes: number; sha256: string };
  documents: { title: string; StoragePath: string; sha256?: string }[];
  /** Every entry of the ZIP, evidence included. */
  files: { name: string; bytes: number; sha256: string }[];
  /** What verification found: each document's seal and hashes, the certificate of completion (docs/evidence.md). */
  evidence?: ArchiveEvidence;
  downloadedAt: string;
  archivedAt: string;
  /** Each renewal of the long-term evidence (a document time-stamp and fresh validation data), oldest first. */
  renewals?: EvidenceRenewal[];
}

/**
 * One renewal of an archive's long-term evidence (docs/evidence.md, "Upkeep"): for each sealed PDF, a copy of
 * its newest version with fresh validation data and a document time-stamp appended as an incremental update,
 * stored beside the untouched `completed.zip` as `renewals/<id>/<entry>`.
 */
export interface EvidenceRenewal {
  /** 1, 2, …: the renewal's place in `renewals`, and its directory. */
  id: number;
  /** The time the renewal was judged at (the upkeep workflow's clock), ISO 8601. */
  asOf: string;
  /** Why it was due: the newest time-stamp's certificate expires within the horizon, or an operator asked. */
  reason: 'expiring' | 'requested';
  documents: {
    /** The ZIP entry the PDF came from. */
    entry: string;
    /** Where the renewed copy is kept, relative to the archive: `renewals/<id>/<entry>`. */
    file: string;
    bytes: number;
    sha256: string;
    /** SHA-256 of the version it extends (the ZIP entry's, or the previous renewal's): the renewed copy starts with those bytes. */
    extends: string;
    /** The new document time-stamp's time, and until when its certificate chain can be verified. */
    timestampedAt: string;
    evidenceExpiresAt: string;
  }[];
}

export interface StoredArchive {
  uri: string;
  manifest: ArchiveManifest;
}

/**
 * Where completed ZIPs end up. `commit` is atomic and idempotent: an archive
 * for a transaction is written once; committing again returns the one that
 * exists, so retries and replays never produce a second or partial archive.
 */
export interface ArchiveStore {
  /** The archive of a transaction, if one was committed. */
  find(key: string): Promise<StoredArchive | undefined>;
  commit(key: string, zipPath: string, manifest: ArchiveManifest): Promise<StoredArchive>;
  /** A scratch directory on the same filesystem as the store, for downloads. */
  scratchDir(): Promise<string>;
}

/** Local-directory store: `<root>/<key>/completed.zip` and `<root>/<key>/manifest.json`. */
export class LocalArchiveStore implements ArchiveStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async scratchDir(): Promise<string> {
    const dir = join(this.root, '.staging');
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async find(key: string): Promise<StoredArchive | undefined> {
    const dir = this.#dir(key);
    try {
      const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as ArchiveManifest;
      return { uri: pathToFileURL(join(dir, 'completed.zip')).href, manifest };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async commit(key: string, zipPath: string, manifest: ArchiveManifest): Promise<StoredArchive> {
    const existing = await this.find(key);
    if (existing) return existing;
    // Build the whole archive in a staging directory, then publish it with one rename.
    const staging = join(await this.scratchDir(), `${key.replace(/\//g, '_')}.${randomUUID()}`);
    await mkdir(staging, { recursive: true });
    try {
      await rename(zipPath, join(staging, 'completed.zip')).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EXDEV') throw err;
        await copyFile(zipPath, join(staging, 'completed.zip'));
      });
      await writeFile(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
      const final = this.#dir(key);
      await mkdir(join(final, '..'), { recursive: true });
      try {
        await rename(staging, final);
      } catch (err) {
        // Another attempt published first: keep theirs.
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      }
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return (await this.find(key))!;
  }

  #dir(key: string): string {
    const dir = resolve(this.root, key);
    if (!dir.startsWith(this.root + '/')) throw new Error(`archive key escapes the store: ${key}`);
    return dir;
  }
}
