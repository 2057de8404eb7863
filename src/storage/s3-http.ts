/**
 * An S3 client for what a backend does with the orchestrator's stores (put a document, get an archive), over
 * node:http(s) and AWS Signature Version 4 (aws4fetch's signer), so that the client package (packages/client)
 * carries no AWS SDK. It is
 * configured like the workers' (src/archive/s3-store.ts `s3Client`): `ESIGN_ARCHIVE_S3_REGION`, and
 * `ESIGN_ARCHIVE_S3_ENDPOINT` for an S3-compatible server (path-style); credentials are static ones, from
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` or given. A backend whose credentials come
 * from elsewhere (a profile, an instance role) passes its own reader or store instead (`S3ObjectReader`,
 * `ObjectStore`), e.g. over the AWS SDK it already has.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { AwsV4Signer } from 'aws4fetch';
import { bucketPrefix, checkObjectKey, collectAtMost, type ObjectGetOptions, type ObjectStore } from './object-store.js';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface S3HttpClientOptions {
  /** Default `us-east-1`. */
  region?: string | undefined;
  /** An S3-compatible server's URL (`http://minio:9000`), addressed path-style; AWS S3 when absent. */
  endpoint?: string | undefined;
  credentials: S3Credentials;
}

/** What reads an object of a bucket: its bytes as a stream, or undefined when there is no such object. */
export interface S3ObjectReader {
  getObject(bucket: string, key: string): Promise<AsyncIterable<Uint8Array> | undefined>;
}

/** An S3 request that failed: the HTTP status and S3's error code (`AccessDenied`, `NoSuchBucket`, …). */
export class S3RequestFailed extends Error {
  override readonly name = 'S3RequestFailed';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

const EMPTY_SHA256 = createHash('sha256').digest('hex');
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export class S3HttpClient implements S3ObjectReader {
  readonly #region: string;
  readonly #endpoint: URL | undefined;
  readonly #credentials: S3Credentials;

  constructor(options: S3HttpClientOptions) {
    this.#region = options.region ?? 'us-east-1';
    this.#endpoint = options.endpoint ? new URL(options.endpoint) : undefined;
    if (this.#endpoint && !/^https?:$/.test(this.#endpoint.protocol))
      throw new RangeError(`S3 endpoint must be http(s): ${options.endpoint}`);
    if (!options.credentials.accessKeyId || !options.credentials.secretAccessKey)
      throw new RangeError('S3 credentials need an access key id and a secret');
    this.#credentials = options.credentials;
  }

  /**
   * The client the workers' settings describe: `ESIGN_ARCHIVE_S3_REGION`, `ESIGN_ARCHIVE_S3_ENDPOINT`, and the
   * credentials of `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`).
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): S3HttpClient {
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) {
      throw new RangeError(
        'no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass a reader or store of your own (e.g. over the AWS SDK)',
      );
    }
    return new S3HttpClient({
      region: env.ESIGN_ARCHIVE_S3_REGION || undefined,
      endpoint: env.ESIGN_ARCHIVE_S3_ENDPOINT || undefined,
      credentials: { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined },
    });
  }

  async getObject(bucket: string, key: string): Promise<Readable | undefined> {
    const res = await this.#send('GET', bucket, key);
    if (res.statusCode === 200) return res;
    const failure = await failureOf(res, 'GET', bucket, key);
    if (failure.status === 404 && failure.code !== 'NoSuchBucket') return undefined;
    throw failure;
  }

  async putObject(bucket: string, key: string, body: Buffer, contentType = 'application/octet-stream'): Promise<void> {
    const res = await this.#send('PUT', bucket, key, body, contentType);
    if (res.statusCode === 200) {
      res.resume();
      return;
    }
    throw await failureOf(res, 'PUT', bucket, key);
  }

  #url(bucket: string, key: string): URL {
    // A URL resolves `.` and `..` segments (even %-encoded): such a key, or a prefix, would address another object,
    // or another bucket, than the one named. S3's own rules for a bucket's name keep it one host label or segment.
    if (!BUCKET.test(bucket)) throw new RangeError(`not an S3 bucket name: ${JSON.stringify(bucket)}`);
    if (key.split('/').some((segment) => segment === '.' || segment === '..'))
      throw new RangeError(`S3 key ${JSON.stringify(key)} has a . or .. segment: it would address another object`);
    const path = key.split('/').map(encodeSegment).join('/');
    if (this.#endpoint) {
      const base = this.#endpoint.href.replace(/\/$/, '');
      return new URL(`${base}/${encodeSegment(bucket)}/${path}`);
    }
    // Virtual-hosted, as AWS wants; a bucket with dots would not match the wildcard certificate: path-style.
    return bucket.includes('.')
      ? new URL(`https://s3.${this.#region}.amazonaws.com/${encodeSegment(bucket)}/${path}`)
      : new URL(`https://${bucket}.s3.${this.#region}.amazonaws.com/${path}`);
  }

  async #send(method: 'GET' | 'PUT', bucket: string, key: string, body?: Buffer, contentType?: string): Promise<IncomingMessage> {
    const url = this.#url(bucket, key);
    const payloadHash = body ? createHash('sha256').update(body).digest('hex') : EMPTY_SHA256;
    const headers: Record<string, string> = {
      host: url.host,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': amzDate(new Date()),
      ...(this.#credentials.sessionToken ? { 'x-amz-security-token': this.#credentials.sessionToken } : {}),
      ...(body ? { 'content-length': String(body.length), 'content-type': contentType! } : {}),
    };
    headers.authorization = await signV4({ method, url, headers, payloadHash, region: this.#region, credentials: this.#credentials });
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers }, resolve);
      req.on('error', reject);
      req.end(body);
    });
  }
}

/**
 * An object store in an S3 bucket over `S3HttpClient` (no AWS SDK), the same keys as the workers' S3 store
 * (src/storage/s3-object-store.ts): `<prefix><key>`.
 */
export class S3HttpObjectStore implements ObjectStore {
  readonly #prefix: string;
  constructor(
    private readonly client: S3HttpClient,
    private readonly bucket: string,
    prefix = '',
  ) {
    this.#prefix = bucketPrefix(prefix);
  }
  get location(): string {
    return `s3://${this.bucket}/${this.#prefix}`;
  }
  async put(key: string, body: Buffer | string): Promise<void> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    await this.client.putObject(
      this.bucket,
      this.#prefix + checkObjectKey(key),
      bytes,
      key.endsWith('.pdf') ? 'application/pdf' : undefined,
    );
  }
  async get(key: string, options: ObjectGetOptions = {}): Promise<Buffer | undefined> {
    const stream = await this.client.getObject(this.bucket, this.#prefix + checkObjectKey(key));
    if (!stream) return undefined;
    const declared = Number((stream as Partial<IncomingMessage>).headers?.['content-length'] ?? NaN);
    return collectAtMost(stream, key, options.maxBytes, Number.isSafeInteger(declared) ? declared : undefined);
  }
  urlOf(key: string): string {
    return `s3://${this.bucket}/${this.#prefix}${checkObjectKey(key)}`;
  }
}

/** RFC 3986 unreserved characters stay; everything else is %-encoded (S3 encodes a key's segments once). */
function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function amzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/**
 * The Authorization header of AWS Signature Version 4 for S3, by aws4fetch's signer (a small, dependency-free
 * implementation of the algorithm; docs/decisions/document-object-store.md): every header given is signed, as sent.
 */
export async function signV4(request: {
  method: string;
  url: URL;
  headers: Record<string, string>;
  payloadHash: string;
  region: string;
  credentials: S3Credentials;
}): Promise<string> {
  const { method, url, headers, payloadHash, region, credentials } = request;
  const signed = await new AwsV4Signer({
    method,
    url: url.href,
    headers: { ...headers, 'x-amz-content-sha256': payloadHash },
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
    service: 's3',
    region,
    datetime: headers['x-amz-date']!,
    allHeaders: true,
  }).sign();
  return signed.headers.get('authorization')!;
}

/** A failed answer as an error: its status and S3's `<Code>`, with the object named. */
async function failureOf(res: IncomingMessage, method: string, bucket: string, key: string): Promise<S3RequestFailed> {
  let text = '';
  for await (const chunk of res) {
    if (text.length < 16_384) text += (chunk as Buffer).toString('utf8');
  }
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  const status = res.statusCode ?? 0;
  return new S3RequestFailed(`S3 ${method} s3://${bucket}/${key} answered HTTP ${status}${code ? ` ${code}` : ''}`, status, code);
}
