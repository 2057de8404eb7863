import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { AesGcmCodec, parseCodecKeys } from './aes-gcm-codec.js';

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
  options: { devFallback?: boolean; plaintext?: 'allow' | 'refuse'; required?: boolean } = {},
): DataConverter | undefined {
  let keys = codecKeysFromEnv(env);
  if (!keys && options.devFallback && existsSync(devCodecKeysFile(env))) keys = readFileSync(devCodecKeysFile(env), 'utf8').trim();
  if (!keys && options.required)
    throw new Error('no codec keys: set ESIGN_CODEC_KEYS (or ESIGN_CODEC_KEYS_FILE) to the keys your workers hold (docs/codec.md)');
  if (!keys) return undefined;
  return encryptingDataConverter(new AesGcmCodec(parseCodecKeys(keys), options.plaintext ? { plaintext: options.plaintext } : {}));
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
