/**
 * Templates in an S3-compatible bucket, under a prefix, with the archive's client settings (src/archive/s3-store.ts).
 * A version is claimed with a conditional write (`If-None-Match: *`, which AWS S3 and MinIO honour); on a server
 * that ignores it, two creates racing for the same name and version could both write it, the later one winning.
 */
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { KeyedTemplateStore } from './store.js';

const status = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const named = (err: unknown, ...names: string[]) => names.includes((err as { name?: string }).name ?? '');

export class S3TemplateStore extends KeyedTemplateStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;

  constructor(options: { client: S3Client; bucket: string; prefix?: string }) {
    super();
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#prefix = options.prefix ? options.prefix.replace(/\/?$/, '/') : '';
  }

  get location(): string {
    return `s3://${this.#bucket}/${this.#prefix}`;
  }

  protected async read(key: string): Promise<Buffer | undefined> {
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch (err) {
      if (named(err, 'NoSuchKey', 'NotFound') || status(err) === 404) return undefined;
      throw err;
    }
  }

  protected async writeIfAbsent(key: string, body: Buffer, contentType: string): Promise<boolean> {
    const Key = this.#prefix + key;
    // Asked first, so a document already stored is not uploaded again.
    const exists = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key })).then(
      () => true,
      (err: unknown) => {
        if (named(err, 'NotFound', 'NoSuchKey') || status(err) === 404) return false;
        throw err;
      },
    );
    if (exists) return false;
    try {
      await this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key, Body: body, ContentType: contentType, IfNoneMatch: '*' }));
      return true;
    } catch (err) {
      // 412: written by someone else meanwhile; 409: a concurrent conditional write is still in flight.
      if (named(err, 'PreconditionFailed', 'ConditionalRequestConflict') || status(err) === 412 || status(err) === 409) return false;
      throw err;
    }
  }

  protected async keysUnder(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#prefix + prefix, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const object of page.Contents ?? []) if (object.Key?.startsWith(this.#prefix)) keys.push(object.Key.slice(this.#prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }
}
