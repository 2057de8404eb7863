import { mkdtemp, rm } from 'node:fs/promises';
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

/** A real S3-compatible HTTP server (s3rver) on loopback, with one bucket, and a client for it. */
export async function startS3(bucket: string): Promise<{ client: S3Client; endpoint: string; close(): Promise<void> }> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const client = s3Client({ region: 'us-east-1', endpoint });
  return {
    client,
    endpoint,
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
