/**
 * Which key store a process uses (ESIGN_KEY_STORE): `sqlite:<path>` on one machine, `s3://<bucket>/<prefix>` for
 * processes on several. Each store's library is loaded only when named, so a backend with neither installed runs
 * the codec without data keys. docs/codec.md, "Data keys and erasure".
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { codecKeysFromEnv, dataConverterFromEnv, devCodecKeysFile } from './data-converter.js';
import type { KeyStore } from './key-store.js';

export type KeyStoreSpec =
  { kind: 'sqlite'; path: string } | { kind: 's3'; bucket: string; prefix: string; endpoint?: string; region: string };

/** The key store ESIGN_KEY_STORE names, or undefined when it names none; a value it cannot read throws, naming it. */
export function keyStoreSpecFromEnv(env: NodeJS.ProcessEnv = process.env): KeyStoreSpec | undefined {
  const value = env.ESIGN_KEY_STORE?.trim();
  if (!value) return undefined;
  if (value.startsWith('sqlite:') && value.length > 'sqlite:'.length) return { kind: 'sqlite', path: value.slice('sqlite:'.length) };
  const s3 = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(value);
  if (s3)
    return {
      kind: 's3',
      bucket: s3[1]!,
      prefix: (s3[2] ?? '').replace(/\/+$/, ''),
      ...(env.ESIGN_KEY_STORE_S3_ENDPOINT ? { endpoint: env.ESIGN_KEY_STORE_S3_ENDPOINT } : {}),
      region: env.ESIGN_KEY_STORE_S3_REGION ?? 'us-east-1',
    };
  throw new Error('ESIGN_KEY_STORE must be sqlite:<path> or s3://<bucket>/<prefix> (docs/codec.md, "Data keys and erasure")');
}

/** The store a spec names, its library loaded now. Not opened: DataKeys opens it, and `esign keys init` creates it. */
export async function loadKeyStore(spec: KeyStoreSpec): Promise<KeyStore> {
  if (spec.kind === 'sqlite') {
    const { SqliteKeyStore } = await import('./sqlite-key-store.js');
    return new SqliteKeyStore({ path: spec.path });
  }
  const [{ s3Client }, { S3KeyStore }] = await Promise.all([import('../storage/s3-client.js'), import('./s3-key-store.js')]);
  const client = s3Client({ region: spec.region, endpoint: spec.endpoint });
  return new S3KeyStore({ client, bucket: spec.bucket, prefix: spec.prefix });
}

/** Where the dev stack keeps its data keys (`npm run dev` creates it beside its codec keys). */
export function devKeyStoreFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.ESIGN_DATA_DIR ?? '.data', 'keys.sqlite');
}

/**
 * How to open the key store ESIGN_KEY_STORE names, or with `devFallback` the dev stack's beside its codec keys (only
 * when the keys are the dev stack's too: a production CLI never picks up a local file); undefined for none.
 */
export function keyStoreFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: { devFallback?: boolean } = {},
): (() => Promise<KeyStore>) | undefined {
  let spec = keyStoreSpecFromEnv(env);
  if (!spec && options.devFallback && !codecKeysFromEnv(env) && existsSync(devCodecKeysFile(env)) && existsSync(devKeyStoreFile(env)))
    spec = { kind: 'sqlite', path: devKeyStoreFile(env) };
  const named = spec;
  return named && (() => loadKeyStore(named));
}

/** The data converter of the orchestrator's own processes (worker, bridge, CLI, codec endpoint): with their key store. */
export function orchestratorDataConverter(
  env: NodeJS.ProcessEnv = process.env,
  options: Omit<NonNullable<Parameters<typeof dataConverterFromEnv>[1]>, 'keyStore'> = {},
): DataConverter | undefined {
  const keyStore = keyStoreFromEnv(env, options);
  return dataConverterFromEnv(env, { ...options, ...(keyStore ? { keyStore } : {}) });
}
