import { createReadStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  type ObjectLockLegalHoldStatus,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { LegalHold } from '../definitions/records.js';
import {
  archiveFile,
  archiveKeys,
  committedRenewal,
  missingFile,
  purgeAllowed,
  type ArchiveManifest,
  type ArchiveStore,
  type RenewalFiles,
  type StoredArchive,
} from './store.js';

import { listObjectVersions, type ObjectVersion } from '../storage/s3-client.js';

export { s3Client } from '../storage/s3-client.js';

export interface S3ArchiveStoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix, e.g. `esign/archive/` (a trailing slash is added). */
  prefix?: string;
  /** Local directory for downloads before upload (defaults to the OS temp dir). */
  scratch?: string;
  /**
   * S3 Object Lock, for a bucket created with it: what must never change (each `completed.zip`, each renewal's
   * files) is written with this retention, `days` from the time of writing. `manifest.json` is not locked: each
   * renewal replaces it (on the versioned bucket Object Lock needs, its earlier versions remain). A legal hold of
   * the register is then also set on the archive's objects (`applyLegalHold`), so S3 refuses to delete them too.
   */
  objectLock?: { mode: 'GOVERNANCE' | 'COMPLIANCE'; days: number };
  /** Objects per ListObjectsV2 page in `keys()` (1-1000, default 1000). */
  listPageSize?: number;
}

/**
 * S3-compatible store: `<prefix><key>/completed.zip` is uploaded first
 * (multipart, streamed from the scratch file), then `<prefix><key>/manifest.json`.
 * The manifest marks an archive as committed: readers and retries look for it,
 * so a crash between the two uploads leaves no archive that counts, and a
 * retry rewrites the same key rather than creating a second one.
 *
 * A renewal of an archive's evidence writes `<prefix><key>/renewals/<id>/<entry>`,
 * then replaces the manifest, the commit point again. With `objectLock`, the ZIP
 * and the renewals' files are written under retention, with a SHA-256 checksum
 * (AWS wants Content-MD5 or a checksum on every PUT that sets a retention), and
 * a legal hold of the register is mirrored as S3's object legal hold.
 */
export class S3ArchiveStore implements ArchiveStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #scratch: string;
  readonly #objectLock: S3ArchiveStoreOptions['objectLock'];
  readonly #listPageSize: number;
  readonly holdsObjects: boolean;

  constructor(options: S3ArchiveStoreOptions) {
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#prefix = options.prefix ? options.prefix.replace(/\/?$/, '/') : '';
    this.#scratch = options.scratch ?? join(tmpdir(), 'esign-archive-staging');
    const lock = options.objectLock;
    if (lock && (!['GOVERNANCE', 'COMPLIANCE'].includes(lock.mode) || !Number.isSafeInteger(lock.days) || lock.days < 1)) {
      throw new Error(`invalid S3 Object Lock: mode must be GOVERNANCE or COMPLIANCE and days a positive integer`);
    }
    this.#objectLock = lock ? { mode: lock.mode, days: lock.days } : undefined;
    // A legal hold needs a bucket with Object Lock, which only a store told of it knows it has.
    this.holdsObjects = this.#objectLock !== undefined;
    this.#listPageSize = options.listPageSize ?? 1000;
    if (!Number.isSafeInteger(this.#listPageSize) || this.#listPageSize < 1 || this.#listPageSize > 1000) {
      throw new Error(`invalid listPageSize ${this.#listPageSize}: 1 to 1000 objects a page`);
    }
  }

  async scratchDir(): Promise<string> {
    await mkdir(this.#scratch, { recursive: true });
    return this.#scratch;
  }

  async find(key: string): Promise<StoredArchive | undefined> {
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#key(key, 'manifest.json') }));
      const manifest = JSON.parse(await res.Body!.transformToString('utf8')) as ArchiveManifest;
      return { uri: this.#uri(key), manifest };
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  async commit(key: string, zipPath: string, manifest: ArchiveManifest): Promise<StoredArchive> {
    const existing = await this.find(key);
    if (existing) return existing;
    await new Upload({
      client: this.#client,
      params: {
        Bucket: this.#bucket,
        Key: this.#key(key, 'completed.zip'),
        Body: createReadStream(zipPath),
        ContentType: 'application/zip',
        // Upload sends one PutObject, or UploadPart per part after a CreateMultipartUpload that carries the
        // retention: the checksum algorithm goes to each of them, so every request with a body has its SHA-256.
        ...this.#locked(manifest),
      },
      partSize: 8 * 1024 * 1024,
      queueSize: 4,
    }).done();
    await this.#putManifest(key, manifest);
    return { uri: this.#uri(key), manifest };
  }

  async *keys(): AsyncIterable<string> {
    const suffix = '/manifest.json';
    const found: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          ...(this.#prefix ? { Prefix: this.#prefix } : {}),
          MaxKeys: this.#listPageSize,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const object of page.Contents ?? []) {
        const name = object.Key;
        if (!name?.startsWith(this.#prefix) || !name.endsWith(suffix)) continue;
        const key = name.slice(this.#prefix.length, -suffix.length);
        if (key !== '' && !key.split('/').some((part) => part === '' || part === '..')) found.push(key);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    yield* archiveKeys(found);
  }

  async read(key: string, file: string): Promise<Buffer> {
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#key(key, archiveFile(key, file)) }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey')
        throw new Error(missingFile(key, file), { cause: err });
      throw err;
    }
  }

  async commitRenewal(key: string, renewal: RenewalFiles, manifest: ArchiveManifest): Promise<StoredArchive> {
    const committed = await committedRenewal(this, key, renewal, manifest);
    if (committed) {
      // A retry after a crash that came before the hold.
      await this.#keepLegalHold(key);
      return committed;
    }
    // The files first; a crash before the manifest leaves objects no manifest names, and a retry rewrites them.
    for (const { name, bytes } of renewal.files) {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key: this.#key(key, name),
          Body: bytes,
          ContentType: name.toLowerCase().endsWith('.pdf') ? 'application/pdf' : 'application/octet-stream',
          ...this.#locked(manifest),
        }),
      );
    }
    await this.#putManifest(key, manifest);
    await this.#keepLegalHold(key);
    return { uri: this.#uri(key), manifest };
  }

  /**
   * A renewal of a held archive is held too: its files and the manifest that names them are new objects, without the
   * hold of the objects they join. Asked after they are written: `applyLegalHold` sets the ZIP's hold before it lists
   * the archive, so a hold set meanwhile is either seen here or finds these objects listed.
   */
  async #keepLegalHold(key: string): Promise<void> {
    if (!this.holdsObjects) return;
    try {
      const held = await this.#client.send(new GetObjectLegalHoldCommand({ Bucket: this.#bucket, Key: this.#key(key, 'completed.zip') }));
      if (held.LegalHold?.Status === 'ON') await this.applyLegalHold(key, true);
    } catch (err) {
      // An object on which no legal hold was ever set has none to give.
      if (!notFound(err)) throw err;
    }
  }

  async applyLegalHold(key: string, on: boolean): Promise<void> {
    if (!this.holdsObjects) return;
    const base = this.#key(key, '');
    const zip = `${base}completed.zip`;
    const ofArchive = (name: string) => name === zip || name === `${base}manifest.json` || name.startsWith(`${base}renewals/`);
    if (on) {
      // The ZIP first, then the listing: a renewal written meanwhile is listed, or sees the ZIP held and holds itself.
      // The current version of each object is what a delete would take; a later version (a manifest a renewal
      // replaces) gets the hold where it is written.
      try {
        await this.#legalHold(zip, 'ON');
      } catch (err) {
        // No ZIP: no archive, or one purged. Nothing to hold.
        if (notFound(err)) return;
        throw err;
      }
      for (const name of await this.#list(base)) if (name !== zip && ofArchive(name)) await this.#legalHold(name, 'ON');
      return;
    }
    // Cleared on every version: one held earlier (a manifest a renewal has since replaced) would otherwise keep its
    // hold for good, and refuse the purge, which deletes every version.
    for (const version of await this.#versions(base)) {
      if (version.DeleteMarker || !ofArchive(version.Key)) continue;
      await this.#releaseVersion(version.Key, version.VersionId);
    }
  }

  async #releaseVersion(Key: string, VersionId: string): Promise<void> {
    await this.#legalHold(Key, 'OFF', VersionId).catch((err: unknown) => {
      // Deleted meanwhile: nothing left to release.
      if (!notFound(err)) throw err;
    });
  }

  async #legalHold(Key: string, Status: ObjectLockLegalHoldStatus, VersionId?: string): Promise<void> {
    await this.#client.send(
      new PutObjectLegalHoldCommand({ Bucket: this.#bucket, Key, ...(VersionId ? { VersionId } : {}), LegalHold: { Status } }),
    );
  }

  /** The manifest, never locked (renewals replace it). */
  async #putManifest(key: string, manifest: ArchiveManifest): Promise<void> {
    await this.#client.send(
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: this.#key(key, 'manifest.json'),
        Body: `${JSON.stringify(manifest, null, 2)}\n`,
        ContentType: 'application/json',
        // A bucket with Object Lock may also have a default retention, under which every PUT needs a checksum.
        ...(this.#objectLock ? { ChecksumAlgorithm: 'SHA256' as const } : {}),
      }),
    );
  }

  /**
   * The retention and checksum of an object that must never change, when the store locks objects: until the archive's
   * retention ends (docs/records.md), or `days` from now for an archive without one.
   */
  #locked(manifest: ArchiveManifest): Pick<PutObjectCommandInput, 'ObjectLockMode' | 'ObjectLockRetainUntilDate' | 'ChecksumAlgorithm'> {
    if (!this.#objectLock) return {};
    const until = manifest.retention ? Date.parse(manifest.retention.until) : Date.now() + this.#objectLock.days * 24 * 60 * 60 * 1000;
    return { ObjectLockMode: this.#objectLock.mode, ObjectLockRetainUntilDate: new Date(until), ChecksumAlgorithm: 'SHA256' };
  }

  async purge(key: string, tombstone: ArchiveManifest, holds: readonly LegalHold[]): Promise<void> {
    if ((await purgeAllowed(this, key, tombstone, holds)) === 'purge') await this.#putManifest(key, tombstone);
    // The tombstone stands: what it destroyed goes. On the versioned bucket Object Lock needs, a delete without a
    // version only hides an object, so every version goes, the manifest's earlier ones (with their personal fields)
    // too; Object Lock lets them go once the retention they were written with ended.
    const base = this.#key(key, '');
    const names = (await this.#list(base)).filter((n) => n === `${base}completed.zip` || n.startsWith(`${base}renewals/`));
    if (!this.#objectLock) {
      for (const Key of names) await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key }));
      return;
    }
    const tombstoneVersion = await this.#versions(`${base}manifest.json`).then((v) => v.find((x) => x.IsLatest)?.VersionId);
    for (const version of await this.#versions(base)) {
      if (version.Key === `${base}manifest.json` && version.VersionId === tombstoneVersion) continue;
      // The register keeps no hold on it (checked above), so an object legal hold still set is one a release raced
      // (a renewal that held itself as the hold went): lifted, or S3 would refuse this purge for good.
      if (!version.DeleteMarker) await this.#releaseVersion(version.Key, version.VersionId);
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: version.Key, VersionId: version.VersionId }));
    }
  }

  /** Object names under a prefix. */
  async #list(prefix: string): Promise<string[]> {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) if (o.Key) names.push(o.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return names;
  }

  /** Every version (and delete marker) of every object under a prefix. */
  #versions(prefix: string): Promise<ObjectVersion[]> {
    return listObjectVersions(this.#client, this.#bucket, prefix);
  }

  #key(key: string, file: string): string {
    if (key.split('/').some((part) => part === '..' || part === '')) throw new Error(`invalid archive key: ${key}`);
    return `${this.#prefix}${key}/${file}`;
  }

  #uri(key: string): string {
    return `s3://${this.#bucket}/${this.#key(key, 'completed.zip')}`;
  }
}

/** S3's answer for an object (or version) that is not there, or that has no legal hold to read. */
function notFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return (
    err instanceof NoSuchKey || e.name === 'NoSuchKey' || e.name === 'NoSuchObjectLockConfiguration' || e.$metadata?.httpStatusCode === 404
  );
}
