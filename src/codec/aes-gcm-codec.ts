import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec, ValueError } from '@temporalio/common';
import proto from '@temporalio/proto';
import { splitList } from '../util/env.js';
import { REFUSED_PLAINTEXT } from './plaintext.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
/** Where a worker's identity names the key ids it decrypts (src/worker/create-worker.ts; read by src/client/codec-check.ts). */
export const CODEC_KEYS_IDENTITY_TAG = 'esign-codec-keys=';

/**
 * A payload this codec cannot decode: corrupt, cut short, or not encrypted with the key its metadata names. Its
 * message names at most a key id (not secret), never anything of the payload, so the failure converter keeps it in
 * clear (src/codec/failure-converter.ts, which recognises it by name): a worker's failed workflow task then says why
 * to readers without the keys. A ValueError, as the codec's errors were before.
 */
export class PayloadUndecodable extends ValueError {
  override readonly name: string = 'PayloadUndecodable';
}

/**
 * The payload was encrypted with a key id this side does not hold. Thrown by the client before a start that no
 * worker could decrypt (src/client/codec-check.ts), and by the codec when a payload names a key it lacks.
 */
export class CodecKeyUnknown extends PayloadUndecodable {
  override readonly name: string = 'CodecKeyUnknown';
}

// A refused plaintext payload decodes to REFUSED_PLAINTEXT, which validation recognises, so the caller
// gets a clear, non-retryable failure instead of a workflow task that fails forever.

export interface CodecKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Encrypts every payload (inputs, results, signals, queries, memos, failures'
 * details) with AES-256-GCM before it reaches Temporal. The key id travels in
 * the payload's metadata, so old payloads stay readable after a rotation:
 * the first key encrypts, all keys decrypt.
 */
export class AesGcmCodec implements PayloadCodec {
  readonly #active: CodecKey;
  readonly #keys: Map<string, Buffer>;
  readonly #refusePlaintext: boolean;

  /** `plaintext: 'refuse'` (the worker's default): a payload that arrived unencrypted decodes to REFUSED_PLAINTEXT. */
  constructor(keys: readonly CodecKey[], options: { plaintext?: 'allow' | 'refuse' } = {}) {
    this.#refusePlaintext = options.plaintext === 'refuse';
    if (keys.length === 0) throw new Error('AesGcmCodec needs at least one key');
    for (const k of keys) if (k.key.length !== 32) throw new Error(`codec key "${k.id}" must be 32 bytes`);
    this.#active = keys[0]!;
    this.#keys = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The key id this codec encrypts with (key ids are not secret: every payload carries its own). */
  get activeKeyId(): string {
    return this.#active.id;
  }

  /** Every key id this codec decrypts. */
  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plaintext = proto.temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', this.#active.key, iv);
      const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { [METADATA_ENCODING_KEY]: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: encoder.encode(this.#active.id) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) {
        // `binary/null` carries no data: an absent argument is not a leak.
        if (!this.#refusePlaintext || (encoding && decoder.decode(encoding) === 'binary/null')) return payload;
        return {
          metadata: { [METADATA_ENCODING_KEY]: encoder.encode('json/plain') },
          data: encoder.encode(JSON.stringify(REFUSED_PLAINTEXT)),
        };
      }
      const keyIdBytes = payload.metadata?.[KEY_ID_METADATA];
      const keyId = keyIdBytes ? decoder.decode(keyIdBytes) : '';
      const key = this.#keys.get(keyId);
      if (!key) throw new CodecKeyUnknown(`no codec key with id "${keyId}" (set ESIGN_CODEC_KEYS)`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < 28) throw new PayloadUndecodable('encrypted payload is too short');
      let plaintext: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
        decipher.setAuthTag(data.subarray(data.length - 16));
        plaintext = Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]);
      } catch (err) {
        // OpenSSL's text says nothing of the payload; the key id says which key did not authenticate it.
        throw new PayloadUndecodable(
          `encrypted payload does not authenticate with codec key "${keyId}" (corrupt, or another key of that id)`,
          err,
        );
      }
      return proto.temporal.api.common.v1.Payload.decode(plaintext);
    });
  }
}

/**
 * The AES-GCM codec among a data converter's codecs, also when another codec wraps it: a wrapper names the codec it
 * wraps `inner` (the worker's reporting of undecodable runs, src/worker/undecodable.ts).
 */
export function aesGcmCodecOf(codecs: readonly PayloadCodec[] | undefined): AesGcmCodec | undefined {
  for (const outer of codecs ?? []) {
    let codec: unknown = outer;
    for (let depth = 0; codec && depth < 4; depth++) {
      if (codec instanceof AesGcmCodec) return codec;
      codec = (codec as { inner?: unknown }).inner;
    }
  }
  return undefined;
}

/** Parses `ESIGN_CODEC_KEYS`: `id:base64key[,id:base64key…]`, the first one encrypts. */
export function parseCodecKeys(value: string): CodecKey[] {
  return splitList(value).map((entry) => {
    const sep = entry.indexOf(':');
    if (sep <= 0) throw new Error('ESIGN_CODEC_KEYS entries must be "<key id>:<base64 32-byte key>"');
    const key = Buffer.from(entry.slice(sep + 1), 'base64');
    if (key.length !== 32) throw new Error(`ESIGN_CODEC_KEYS: key "${entry.slice(0, sep)}" is not 32 bytes of base64`);
    return { id: entry.slice(0, sep), key };
  });
}

export function newCodecKeys(id = 'k1'): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}
