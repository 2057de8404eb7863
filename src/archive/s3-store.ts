import { createReadStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, NoSuchKey, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ArchiveManifest, ArchiveStore, StoredArchive } from './store.js';

/** An S3 client for AWS or an S3-compatible endpoint (path-style, and only the checksums such servers know). */
export function s3Client(options: { region: string; endpoint?: string | undefined }): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export interface S3ArchiveStoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix, e.g. `esign/archive/` (a trailing slash is added). */
  prefix?: string;
  /** Local directory for downloads before upload (defaults to the OS temp dir). */
  scratch?: string;
}

/**
 * S3-compatible store: `<prefix><key>/completed.zip` is uploaded first
 * (multipart, streamed from the scratch file), then `<prefix><key>/manifest.json`.
 * The manifest marks an archive as committed: readers and retries look for it,
 * so a crash between the two uploads leaves no archive that counts, and a
 * retry rewrites the same key rather than creating a second one.
 */
export class S3ArchiveStore implements ArchiveStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #scratch: string;

  constructor(options: S3ArchiveStoreOptions) {
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#prefix = options.prefix ? options.prefix.replace(/\/?$/, '/') : '';
    this.#scratch = options.scratch ?? join(tmpdir(), 'esign-archive-staging');
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
      },
      partSize: 8 * 1024 * 1024,
      queueSize: 4,
    }).done();
    await this.#client.send(
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: this.#key(key, 'manifest.json'),
        Body: `${JSON.stringify(manifest, null, 2)}\n`,
        ContentType: 'application/json',
      }),
    );
    return { uri: this.#uri(key), manifest };
  }

  #key(key: string, file: string): string {
    if (key.split('/').some((part) => part === '..' || part === '')) throw new Error(`invalid archive key: ${key}`);
    return `${this.#prefix}${key}/${file}`;
  }

  #uri(key: string): string {
    return `s3://${this.#bucket}/${this.#key(key, 'completed.zip')}`;
  }
}
