import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { s3Client } from '../../src/archive/s3-store.js';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverInstance;

/** One HTTP request as it reached the server: its headers, and its body's size and SHA-256 (base64, as S3 checksums are). */
export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/bucket/key?partNumber=1&uploadId=…`. */
  url: string;
  headers: IncomingHttpHeaders;
  body: { bytes: number; sha256: string };
  /** With `objectLock`: a PutObjectLegalHold's status, as its body set it. */
  legalHold?: 'ON' | 'OFF';
}

export interface TestS3 {
  client: S3Client;
  endpoint: string;
  /** With `record`: every request the client sent, in order (else empty). */
  requests: RecordedRequest[];
  /** With `objectLock`: each object's legal hold as the proxy keeps it (object key, without the bucket). */
  legalHolds: Map<string, 'ON' | 'OFF'>;
  close(): Promise<void>;
}

/**
 * A real S3-compatible HTTP server (s3rver) on loopback, with one bucket, and a client for it. With `record`, the
 * client talks to a pass-through HTTP proxy in front of s3rver that keeps each request's headers and body hash
 * (for what s3rver ignores, such as Object Lock headers and checksums); requests are forwarded unchanged.
 *
 * With `objectLock` (which records), the proxy answers itself what a bucket with Object Lock has and s3rver has not:
 * PutObjectLegalHold and GetObjectLegalHold, kept per object (a new write of an object, a new version, has none);
 * a DeleteObject of a held version, refused (403 AccessDenied); and ListObjectVersions, which lists each object as
 * its one version (`v-<its ETag>`). Other requests go through.
 *
 * With `ownProcess`, s3rver runs in a child Node with OpenSSL's legacy provider: its ListObjectsV2 continuation
 * tokens are DES-encrypted, which Node's OpenSSL 3 has only there, so in this process a listing that spans more
 * than one page fails with InternalError.
 */
export async function startS3(
  bucket: string,
  options: { record?: boolean; ownProcess?: boolean; objectLock?: boolean } = {},
): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const settings = { port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] };
  const server = options.ownProcess ? await s3rverProcess(settings) : await s3rverHere(settings);
  const { port } = server;
  const requests: RecordedRequest[] = [];
  const legalHolds = new Map<string, 'ON' | 'OFF'>();
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  // The proxy's own way to s3rver, for what it answers itself.
  const direct = options.objectLock ? s3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${port}` }) : undefined;
  const emulation = direct ? objectLockOf(bucket, direct, legalHolds) : undefined;
  const proxy = options.record || emulation ? await recordingProxy(port, requests, emulation) : undefined;
  const endpoint = `http://127.0.0.1:${proxy ? (proxy.address() as AddressInfo).port : port}`;
  const client = s3Client({ region: 'us-east-1', endpoint });
  return {
    client,
    endpoint,
    requests,
    legalHolds,
    async close() {
      client.destroy();
      direct?.destroy();
      if (proxy) {
        proxy.closeAllConnections();
        await new Promise<void>((resolve) => proxy.close(() => resolve()));
      }
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** What the proxy does itself in front of s3rver. */
interface Emulation {
  /** Whether the proxy answers this request rather than s3rver. */
  answers(method: string, url: URL): boolean;
  answer(req: RecordedRequest, url: URL, body: Buffer): Promise<{ status: number; xml: string }>;
  /** A request that goes through to s3rver. */
  passing(req: RecordedRequest, url: URL): void;
}

/**
 * Object Lock's legal holds and version listing, over s3rver's objects. A write of an object (a PutObject, a completed
 * multipart upload) drops its hold, as S3's new version of it has none.
 */
function objectLockOf(bucket: string, direct: S3Client, legalHolds: Map<string, 'ON' | 'OFF'>): Emulation {
  const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const error = (status: number, code: string) => ({ status, xml: xml(`<Error><Code>${code}</Code><Message>${code}</Message></Error>`) });
  const objectKey = (url: URL) => {
    const path = decodeURIComponent(url.pathname);
    return path.startsWith(`/${bucket}/`) && path.length > bucket.length + 2 ? path.slice(bucket.length + 2) : undefined;
  };
  // The SDK asks for the bucket's listings at `/<bucket>/`.
  const ofBucket = (url: URL) => url.pathname === `/${bucket}` || url.pathname === `/${bucket}/`;
  return {
    answers: (method, url) =>
      (objectKey(url) !== undefined && url.searchParams.has('legal-hold')) ||
      (ofBucket(url) && url.searchParams.has('versions')) ||
      (method === 'DELETE' && url.searchParams.has('versionId') && legalHolds.get(objectKey(url) ?? '') === 'ON'),
    async answer(req, url, body) {
      const key = objectKey(url);
      // A held version is not deleted, whoever asks.
      if (key !== undefined && req.method === 'DELETE') return error(403, 'AccessDenied');
      if (key !== undefined) {
        const status = /<Status>(ON|OFF)<\/Status>/.exec(body.toString('utf8'))?.[1] as 'ON' | 'OFF' | undefined;
        if (status) req.legalHold = status;
        const exists = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
          () => true,
          () => false,
        );
        if (!exists) return error(404, 'NoSuchKey');
        if (req.method === 'PUT') {
          if (!status) return error(400, 'MalformedXML');
          legalHolds.set(key, status);
          return { status: 200, xml: '' };
        }
        const held = legalHolds.get(key);
        if (!held) return error(404, 'NoSuchObjectLockConfiguration');
        return { status: 200, xml: xml(`<LegalHold><Status>${held}</Status></LegalHold>`) };
      }
      const prefix = url.searchParams.get('prefix') ?? '';
      const versions: string[] = [];
      let token: string | undefined;
      do {
        const page = await direct.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
        );
        for (const o of page.Contents ?? []) {
          versions.push(
            `<Version><Key>${escape(o.Key!)}</Key><VersionId>v-${(o.ETag ?? '').replace(/"/g, '')}</VersionId>` +
              `<IsLatest>true</IsLatest><LastModified>${o.LastModified!.toISOString()}</LastModified><Size>${o.Size ?? 0}</Size></Version>`,
          );
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return {
        status: 200,
        xml: xml(
          `<ListVersionsResult><Name>${bucket}</Name><Prefix>${escape(prefix)}</Prefix><IsTruncated>false</IsTruncated>` +
            `${versions.join('')}</ListVersionsResult>`,
        ),
      };
    },
    passing(req, url) {
      const key = objectKey(url);
      const write = (req.method === 'PUT' && url.search === '') || (req.method === 'POST' && url.searchParams.has('uploadId'));
      if (key !== undefined && (write || req.method === 'DELETE')) legalHolds.delete(key);
    },
  };
}

/** Forwards each request to 127.0.0.1:`port` as it came (the Host header too, which the signature covers), recording it. */
async function recordingProxy(port: number, requests: RecordedRequest[], emulation?: Emulation) {
  const proxy = createServer((req, res) => {
    const hash = createHash('sha256');
    const recorded: RecordedRequest = { method: req.method!, url: req.url!, headers: { ...req.headers }, body: { bytes: 0, sha256: '' } };
    requests.push(recorded);
    const url = new URL(req.url!, 'http://s3');
    if (emulation?.answers(req.method!, url)) {
      // A small body (a legal hold's XML): read whole, then answered here.
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        recorded.body = { bytes: body.length, sha256: createHash('sha256').update(body).digest('base64') };
        emulation.answer(recorded, url, body).then(
          ({ status, xml }) => res.writeHead(status, { 'content-type': 'application/xml' }).end(xml),
          (err: unknown) => res.destroy(err as Error),
        );
      });
      return;
    }
    emulation?.passing(recorded, url);
    // `Expect: 100-continue` was answered here already (and is not signed): the body follows at once.
    const { expect: _expect, ...headers } = req.headers;
    const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.statusMessage, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (err) => res.destroy(err));
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      recorded.body.bytes += chunk.length;
    });
    req.on('end', () => (recorded.body.sha256 = hash.digest('base64')));
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return proxy;
}

interface RunningS3rver {
  port: number;
  close(): Promise<void>;
}

async function s3rverHere(settings: Record<string, unknown>): Promise<RunningS3rver> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;
  const server = new S3rver(settings);
  const { port } = await server.run();
  return { port, close: () => server.close() };
}

async function s3rverProcess(settings: Record<string, unknown>): Promise<RunningS3rver> {
  const script = `
    const S3rver = require(${JSON.stringify(createRequire(import.meta.url).resolve('s3rver'))});
    const server = new S3rver(${JSON.stringify(settings)});
    server.run().then(({ port }) => process.send({ port }), (err) => { console.error(err); process.exit(1); });
    process.on('disconnect', () => server.close().finally(() => process.exit(0)));
  `;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', script], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`s3rver exited with ${String(code)} before listening`));
    child.once('exit', exited);
    child.once('message', (message: { port: number }) => {
      child.off('exit', exited);
      resolve(message.port);
    });
  });
  return {
    port,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
