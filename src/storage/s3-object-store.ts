/** Batch files in an S3-compatible bucket, and the store a setting names (ESIGN_TEMPLATE_STORE): see ./object-store.ts. */
import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { s3Client } from '../archive/s3-store.js';
import { bucketPrefix, checkObjectKey, collectAtMost, LocalObjectStore, type ObjectGetOptions, type ObjectStore } from './object-store.js';

export class S3ObjectStore implements ObjectStore {
  readonly #prefix: string;
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    prefix = '',
  ) {
    this.#prefix = bucketPrefix(prefix);
  }
  get location(): string {
    return `s3://${this.bucket}/${this.#prefix}`;
  }
  async put(key: string, body: Buffer | string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.#prefix + checkObjectKey(key), Body: body }));
  }
  async get(key: string, options: ObjectGetOptions = {}): Promise<Buffer | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#prefix + checkObjectKey(key) }));
      if (options.maxBytes === undefined) return Buffer.from(await out.Body!.transformToByteArray());
      return await collectAtMost(out.Body as AsyncIterable<Uint8Array>, key, options.maxBytes, out.ContentLength);
    } catch (err) {
      if (err instanceof NoSuchKey) return undefined;
      throw err;
    }
  }
  urlOf(key: string): string {
    return `s3://${this.bucket}/${this.#prefix}${checkObjectKey(key)}`;
  }
}

/**
 * The store a setting names (ESIGN_TEMPLATE_STORE, parsed by src/templates/env.ts): a directory, or
 * `s3://bucket/prefix` with the archive's S3 endpoint and region. Batch files live beside the templates.
 */
export function objectStoreAt(setting: { location: string; s3: { region: string; endpoint: string | undefined } }): ObjectStore {
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(setting.location);
  if (!s3) return new LocalObjectStore(setting.location);
  return new S3ObjectStore(s3Client(setting.s3), s3[1]!, s3[2]);
}
