import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { AesGcmCodec, parseCodecKeys } from './aes-gcm-codec.js';
import { DataKeys } from './data-keys.js';
import type { KeyStore } from './key-store.js';

export { failureConverter } from './failure-converter.js';

/**
 * The module holding the failure converter that encodes failures' messages, loaded by path (Temporal's bundler and
 * `loadDataConverter` require it): beside this one, as source under tsx and compiled in the client package.
 */
export const failureConverterPath = fileURLToPath(
  new URL(`./failure-converter.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url),
);

/** A data converter that encrypts payloads and failures' messages and stack traces alike. */
export function encryptingDataConverter(codec: PayloadCodec): DataConverter {
  return { payloadCodecs: [codec], failureConverterPath };
}

/** Where the dev stack keeps the keys it generated (git-ignored with the rest of the data dir). */
export function devCodecKeysFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.ESIGN_DATA_DIR ?? '.data', 'codec.keys');
}

/** The codec keys from ESIGN_CODEC_KEYS, else the file ESIGN_CODEC_KEYS_FILE names, else none. */
export function codecKeysFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const inline = env.ESIGN_CODEC_KEYS?.trim();
  if (inline) return inline;
  const file = env.ESIGN_CODEC_KEYS_FILE;
  if (file) return readFileSync(file, 'utf8').trim();
  return undefined;
}

/**
 * The data converter every process uses (worker, client helpers, bridge, CLI):
 * encrypting when keys are configured, plain otherwise (undefined). `devFallback` also
 * looks for the dev stack's key file, so local tools work with no setup; `required`
 * throws, naming the variable, instead of answering plain (a backend that must encrypt).
 */
export function dataConverterFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: {
    devFallback?: boolean;
    plaintext?: 'allow' | 'refuse';
    required?: boolean;
    /** The key store of data keys, or how to open it (the orchestrator's processes: ./key-store-config.ts). */
    keyStore?: KeyStore | (() => Promise<KeyStore>) | undefined;
  } = {},
): DataConverter | undefined {
  let keys = codecKeysFromEnv(env);
  const dev = !keys && options.devFallback === true && existsSync(devCodecKeysFile(env));
  if (dev) keys = readFileSync(devCodecKeysFile(env), 'utf8').trim();
  if (!keys && options.required)
    throw new Error('no codec keys: set ESIGN_CODEC_KEYS (or ESIGN_CODEC_KEYS_FILE) to the keys your workers hold (docs/codec.md)');
  if (!keys) return undefined;
  const masters = parseCodecKeys(keys);
  // Data keys: each workflow's payloads under a key of its own, which erasure destroys. The caller gives the store
  // (its libraries are the orchestrator's, not a backend's); one named but not given would write beyond erasure.
  if (!options.keyStore && env.ESIGN_KEY_STORE?.trim())
    throw new Error('ESIGN_KEY_STORE names a key store: pass it as the keyStore option (docs/codec.md, "Data keys and erasure")');
  const storeId = env.ESIGN_KEY_STORE_ID?.trim() || undefined;
  const dataKeys = options.keyStore ? new DataKeys(options.keyStore, masters, { storeId }) : undefined;
  return encryptingDataConverter(
    new AesGcmCodec(masters, { ...(options.plaintext ? { plaintext: options.plaintext } : {}), ...(dataKeys ? { dataKeys } : {}) }),
  );
}

/**
 * The worker's plaintext policy (ESIGN_CODEC_PLAINTEXT): with keys configured,
 * inputs that arrived unencrypted are refused unless `allow` (a migration).
 */
export function workerPlaintextPolicy(env: NodeJS.ProcessEnv = process.env): 'allow' | 'refuse' {
  const value = (env.ESIGN_CODEC_PLAINTEXT ?? 'refuse').trim().toLowerCase();
  if (value !== 'allow' && value !== 'refuse')
    throw new Error('invalid worker configuration: ESIGN_CODEC_PLAINTEXT must be "refuse" or "allow"');
  return value;
}
