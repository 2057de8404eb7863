import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ArchiveManifest, EvidenceRenewal } from './manifest.js';
import type { LegalHold } from '../definitions/records.js';
import { purgeRefusal } from '../records/retention.js';

export type { ArchiveManifest, EvidenceRenewal } from './manifest.js';

export interface StoredArchive {
  uri: string;
  manifest: ArchiveManifest;
}

/** The renewed copies of one evidence renewal, each named `renewals/<id>/<entry>` (relative to the archive). */
export interface RenewalFiles {
  id: number;
  files: { name: string; bytes: Buffer }[];
}

/**
 * Where completed ZIPs end up. `commit` is atomic and idempotent: an archive
 * for a transaction is written once; committing again returns the one that
 * exists, so retries and replays never produce a second or partial archive.
 *
 * An archive is `<key>/completed.zip` and `<key>/manifest.json`, plus the files
 * of its evidence renewals, `<key>/renewals/<id>/<entry>`, beside the ZIP. The
 * manifest is what makes anything count: an archive exists once its manifest
 * does, and a renewal once the manifest records it.
 */
export interface ArchiveStore {
  /** The archive of a transaction, if one was committed. */
  find(key: string): Promise<StoredArchive | undefined>;
  commit(key: string, zipPath: string, manifest: ArchiveManifest): Promise<StoredArchive>;
  /** A scratch directory on the same filesystem as the store, for downloads. */
  scratchDir(): Promise<string>;
  /**
   * The key of every committed archive (one whose manifest exists; staged or partial ones are not), in
   * lexicographic order (JavaScript string order). The whole listing is read before the first key is given.
   */
  keys(): AsyncIterable<string>;
  /**
   * The bytes of a file of an archive: `completed.zip`, or a renewal's `renewals/<id>/<entry>`. A `file` that
   * would leave the archive (`..`, absolute) is refused; a missing one throws an Error naming key and file.
   */
  read(key: string, file: string): Promise<Buffer>;
  /**
   * Records an evidence renewal: writes each file at `<key>/<name>` (every name under `renewals/<id>/`), then
   * replaces the manifest with `manifest`, which must be the stored one with this renewal appended. The manifest
   * is the commit point: a crash before it leaves files no manifest names, which a retry rewrites. Idempotent:
   * when the stored manifest already records renewal `id`, it is returned as it is and nothing is written.
   * `completed.zip` is never touched.
   */
  commitRenewal(key: string, renewal: RenewalFiles, manifest: ArchiveManifest): Promise<StoredArchive>;
  /**
   * Destroys an archive at the end of its retention (docs/records.md): replaces its manifest with `tombstone`
   * (`tombstoneOf`), the commit point, then deletes its ZIP and renewals. Refused (nothing touched) before its
   * retention ends, or while one of `holds` keeps it. A retry, or a purge of a tombstone, deletes what a crash left.
   */
  purge(key: string, tombstone: ArchiveManifest, holds: readonly LegalHold[]): Promise<void>;
  /**
   * Whether the storage itself refuses to delete what a legal hold covers (S3 with Object Lock): only then does
   * `applyLegalHold` do anything. Elsewhere the register is the only guard, which `purge` consults.
   */
  readonly holdsObjects: boolean;
  /**
   * Sets (`on`) or clears the storage's own legal hold on every object of an archive: its ZIP, renewals and
   * manifest. Idempotent; nothing where `holdsObjects` is false. An archive that does not exist is left alone.
   */
  applyLegalHold(key: string, on: boolean): Promise<void>;
}

/** What both stores check before a purge: the archive exists and may be purged; undefined when it already was. */
export async function purgeAllowed(
  store: ArchiveStore,
  key: string,
  tombstone: ArchiveManifest,
  holds: readonly LegalHold[],
): Promise<'purge' | 'tombstone'> {
  const stored = await store.find(key);
  if (!stored) throw new Error(`cannot purge ${key}: no archive`);
  if (stored.manifest.purged) return 'tombstone';
  if (!tombstone.purged || tombstone.transactionId !== stored.manifest.transactionId || tombstone.zip.sha256 !== stored.manifest.zip.sha256)
    throw new Error(`cannot purge ${key}: the tombstone is not this archive's`);
  const refusal = purgeRefusal(stored.manifest, holds, tombstone.purged.at);
  if (refusal) throw new PurgeRefused(`cannot purge ${key}: ${refusal}`);
  return 'purge';
}

/** A purge the archive's retention or a hold forbids. */
export class PurgeRefused extends Error {
  override readonly name = 'PurgeRefused';
}

/**
 * A file's path inside an archive, checked: relative, `/`-separated, without `.`, `..` or empty segments,
 * so that it cannot leave the archive's directory (or key prefix).
 */
export function archiveFile(key: string, file: string): string {
  if (
    typeof file !== 'string' ||
    file === '' ||
    file.includes('\\') ||
    file.includes('\0') ||
    file.split('/').some((part) => part === '' || part === '.' || part === '..')
  ) {
    throw new Error(`invalid file "${file}" for archive ${key}: it must be a relative path inside the archive`);
  }
  return file;
}

/** The message of a file an archive does not have. */
export function missingFile(key: string, file: string): string {
  return `archive ${key} has no file ${file}`;
}

/** The names of a renewal's files, checked: each under `renewals/<id>/`, inside the archive, no name twice. */
export function checkRenewalFiles(key: string, renewal: RenewalFiles): void {
  if (!Number.isSafeInteger(renewal.id) || renewal.id < 1) throw new Error(`invalid renewal id ${renewal.id} for archive ${key}`);
  const dir = `renewals/${renewal.id}/`;
  const names = new Set<string>();
  for (const { name, bytes } of renewal.files) {
    archiveFile(key, name);
    if (!name.startsWith(dir)) throw new Error(`renewal ${renewal.id} of archive ${key} may only write under ${dir}, not ${name}`);
    if (names.has(name)) throw new Error(`renewal ${renewal.id} of archive ${key} writes ${name} twice`);
    if (!Buffer.isBuffer(bytes)) throw new Error(`renewal ${renewal.id} of archive ${key}: ${name} has no bytes`);
    names.add(name);
  }
}

/**
 * What both stores check before writing a renewal: its file names, that the archive exists, and whether it
 * already records this renewal (a retry: the stored archive is returned and nothing is written).
 */
export async function committedRenewal(
  store: ArchiveStore,
  key: string,
  renewal: RenewalFiles,
  manifest: ArchiveManifest,
): Promise<StoredArchive | undefined> {
  checkRenewalFiles(key, renewal);
  const stored = await store.find(key);
  if (!stored) throw new Error(`cannot record renewal ${renewal.id}: no archive ${key}`);
  return renewalCommitted(key, renewal, stored.manifest, manifest) ? stored : undefined;
}

/**
 * Whether `stored` already records renewal `renewal.id` (then the commit is a retry: nothing is written), else
 * checks that `manifest` is `stored` with that renewal appended, naming only files the renewal writes.
 */
export function renewalCommitted(key: string, renewal: RenewalFiles, stored: ArchiveManifest, manifest: ArchiveManifest): boolean {
  const refuse = (why: string) => new Error(`cannot record renewal ${renewal.id} of archive ${key}: ${why}`);
  // A renewal read before the purge and committed after it would put the archive's personal fields back over the
  // tombstone (which keeps the ZIP's hash and no renewals, so nothing below would notice). The retry finds it purged.
  if (stored.purged) throw refuse(`it was purged at ${stored.purged.at} (its tombstone stands)`);
  const before = stored.renewals ?? [];
  if (before.some((r) => r.id === renewal.id)) return true;
  const after = manifest.renewals ?? [];
  if (manifest.zip?.sha256 !== stored.zip?.sha256 || manifest.transactionId !== stored.transactionId) {
    throw refuse("the manifest is not the stored archive's (transaction or ZIP differ)");
  }
  const ids = (list: EvidenceRenewal[]) => list.map((r) => r.id).join(',');
  if (after.length !== before.length + 1 || ids(after.slice(0, -1)) !== ids(before) || after.at(-1)!.id !== renewal.id) {
    throw refuse(`the manifest's renewals [${ids(after)}] must be the stored ones [${ids(before)}] followed by ${renewal.id}`);
  }
  const written = new Set(renewal.files.map((f) => f.name));
  const unwritten = after
    .at(-1)!
    .documents.filter((d) => !written.has(d.file))
    .map((d) => d.file);
  if (unwritten.length > 0) throw refuse(`the manifest names files the renewal does not write: ${unwritten.join(', ')}`);
  return false;
}

/** Drops the keys that lie in another archive's renewals (a renewed entry named `…/manifest.json`), and sorts. */
export function archiveKeys(candidates: Iterable<string>): string[] {
  const all = new Set(candidates);
  return [...all]
    .filter((key) => {
      for (let i = key.indexOf('/renewals/'); i > 0; i = key.indexOf('/renewals/', i + 1)) if (all.has(key.slice(0, i))) return false;
      return true;
    })
    .sort();
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
      // On the disk before it is published: once the activity says archived, a crash or a power cut must not
      // leave a published archive with a ZIP the page cache never wrote.
      await syncFile(join(staging, 'completed.zip'));
      await writeDurably(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
      await syncDir(staging);
      const final = this.#dir(key);
      await mkdir(join(final, '..'), { recursive: true });
      try {
        await rename(staging, final);
        await syncDir(dirname(final));
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

  async *keys(): AsyncIterable<string> {
    const found: string[] = [];
    const walk = async (dir: string, key: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        // Gone meanwhile, or the store was never written to.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
        throw err;
      }
      const archive = key !== '' && entries.some((e) => e.name === 'manifest.json' && e.isFile());
      if (archive) found.push(key);
      for (const e of entries) {
        // Symbolic links are not followed: an archive is a real directory of the store.
        if (!e.isDirectory()) continue;
        if (key === '' && e.name === '.staging') continue;
        if (archive && e.name === 'renewals') continue;
        await walk(join(dir, e.name), key === '' ? e.name : `${key}/${e.name}`);
      }
    };
    await walk(this.root, '');
    yield* archiveKeys(found);
  }

  async read(key: string, file: string): Promise<Buffer> {
    const path = this.#file(key, file);
    try {
      return await readFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') throw new Error(missingFile(key, file), { cause: err });
      throw err;
    }
  }

  async commitRenewal(key: string, renewal: RenewalFiles, manifest: ArchiveManifest): Promise<StoredArchive> {
    const committed = await committedRenewal(this, key, renewal, manifest);
    if (committed) return committed;
    // The files first, each durable (with the directories that name it) before the manifest names it; a retry
    // after a crash rewrites them.
    const dir = this.#dir(key);
    const dirs = new Set<string>();
    for (const { name, bytes } of renewal.files) {
      const path = this.#file(key, name);
      await mkdir(dirname(path), { recursive: true });
      await writeDurably(path, bytes);
      for (let d = dirname(path); d !== dir; d = dirname(d)) dirs.add(d);
    }
    for (const d of dirs) await syncDir(d);
    if (dirs.size > 0) await syncDir(dir);
    // Then the manifest.
    await this.#replaceManifest(dir, manifest);
    return { uri: pathToFileURL(join(dir, 'completed.zip')).href, manifest };
  }

  /** A directory has no hold of its own: the register, which `purge` consults, is the guard. */
  readonly holdsObjects = false;

  async applyLegalHold(key: string): Promise<void> {
    this.#dir(key);
  }

  async purge(key: string, tombstone: ArchiveManifest, holds: readonly LegalHold[]): Promise<void> {
    const dir = this.#dir(key);
    if ((await purgeAllowed(this, key, tombstone, holds)) === 'purge') await this.#replaceManifest(dir, tombstone);
    // The tombstone stands: what it destroyed goes, and a retry removes what a crash left.
    await rm(join(dir, 'completed.zip'), { force: true });
    await rm(join(dir, 'renewals'), { recursive: true, force: true });
    await syncDir(dir);
  }

  /** Replaces the manifest in one rename: readers see the old one or the new one, never a part. */
  async #replaceManifest(dir: string, manifest: ArchiveManifest): Promise<void> {
    const temp = join(dir, `.manifest.json.${randomUUID()}.tmp`);
    try {
      await writeDurably(temp, `${JSON.stringify(manifest, null, 2)}\n`);
      await rename(temp, join(dir, 'manifest.json'));
    } finally {
      await rm(temp, { force: true });
    }
    await syncDir(dir);
  }

  #file(key: string, file: string): string {
    const dir = this.#dir(key);
    const path = resolve(dir, archiveFile(key, file));
    if (!path.startsWith(dir + '/'))
      throw new Error(`invalid file "${file}" for archive ${key}: it must be a relative path inside the archive`);
    return path;
  }

  #dir(key: string): string {
    const dir = resolve(this.root, key);
    if (!dir.startsWith(this.root + '/')) throw new Error(`archive key escapes the store: ${key}`);
    return dir;
  }
}

/** Writes a file and flushes it to the disk before returning. */
async function writeDurably(path: string, data: string | Buffer): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes a file written as a stream to the disk. */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes a directory's entries (a new or renamed file's name) to the disk, where the platform can. */
async function syncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EBADF') throw err;
  } finally {
    await handle?.close();
  }
}
