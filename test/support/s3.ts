import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
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
}

export interface TestS3 {
  client: S3Client;
  endpoint: string;
  /** With `record`: every request the client sent, in order (else empty). */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A real S3-compatible HTTP server (s3rver) on loopback, with one bucket, and a client for it. With `record`, the
 * client talks to a pass-through HTTP proxy in front of s3rver that keeps each request's headers and body hash
 * (for what s3rver ignores, such as Object Lock headers and checksums); requests are forwarded unchanged.
 *
 * With `ownProcess`, s3rver runs in a child Node with OpenSSL's legacy provider: its ListObjectsV2 continuation
 * tokens are DES-encrypted, which Node's OpenSSL 3 has only there, so in this process a listing that spans more
 * than one page fails with InternalError.
 */
export async function startS3(bucket: string, options: { record?: boolean; ownProcess?: boolean } = {}): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const settings = { port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] };
  const server = options.ownProcess ? await s3rverProcess(settings) : await s3rverHere(settings);
  const { port } = server;
  const requests: RecordedRequest[] = [];
  const proxy = options.record ? await recordingProxy(port, requests) : undefined;
  const endpoint = `http://127.0.0.1:${proxy ? (proxy.address() as AddressInfo).port : port}`;
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const client = s3Client({ region: 'us-east-1', endpoint });
  return {
    client,
    endpoint,
    requests,
    async close() {
      client.destroy();
      if (proxy) {
        proxy.closeAllConnections();
        await new Promise<void>((resolve) => proxy.close(() => resolve()));
      }
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Forwards each request to 127.0.0.1:`port` as it came (the Host header too, which the signature covers), recording it. */
async function recordingProxy(port: number, requests: RecordedRequest[]) {
  const proxy = createServer((req, res) => {
    const hash = createHash('sha256');
    const recorded: RecordedRequest = { method: req.method!, url: req.url!, headers: { ...req.headers }, body: { bytes: 0, sha256: '' } };
    requests.push(recorded);
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
