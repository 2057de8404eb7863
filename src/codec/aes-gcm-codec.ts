import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec, type SerializationContext } from '@temporalio/common';
import proto from '@temporalio/proto';
import { splitList } from '../util/env.js';
import { CodecKeyUnknown, PayloadUndecodable, type CodecKey } from './codec-errors.js';
import { DATA_KEY_PREFIX, type DataKeys } from './data-keys.js';
import { REFUSED_PLAINTEXT } from './plaintext.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
/** Where a worker's identity names the key ids it decrypts (src/worker/create-worker.ts; read by src/client/codec-check.ts). */
export const CODEC_KEYS_IDENTITY_TAG = 'esign-codec-keys=';

export { CodecKeyUnknown, PayloadUndecodable, type CodecKey } from './codec-errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Encrypts every payload (inputs, results, signals, queries, memos, failures'
 * details) with AES-256-GCM before it reaches Temporal. The key id travels in
 * the payload's metadata, so old payloads stay readable after a rotation:
 * the first key encrypts, all keys decrypt. With data keys (a key store), a
 * payload that belongs to a workflow is encrypted with that workflow id's own
 * key instead, which erasure destroys (docs/codec.md, "Data keys and erasure").
 */
export class AesGcmCodec implements PayloadCodec {
  readonly #active: CodecKey;
  readonly #keys: Map<string, Buffer>;
  readonly #refusePlaintext: boolean;
  readonly #dataKeys: DataKeys | undefined;

  /** `plaintext: 'refuse'` (the worker's default): a payload that arrived unencrypted decodes to REFUSED_PLAINTEXT. */
  constructor(keys: readonly CodecKey[], options: { plaintext?: 'allow' | 'refuse'; dataKeys?: DataKeys } = {}) {
    this.#refusePlaintext = options.plaintext === 'refuse';
    if (keys.length === 0) throw new Error('AesGcmCodec needs at least one key');
    for (const k of keys) if (k.key.length !== 32) throw new Error(`codec key "${k.id}" must be 32 bytes`);
    this.#active = keys[0]!;
    this.#keys = new Map(keys.map((k) => [k.id, k.key]));
    this.#dataKeys = options.dataKeys;
  }

  /** The key id this codec encrypts with (key ids are not secret: every payload carries its own). */
  get activeKeyId(): string {
    return this.#active.id;
  }

  /** Every key id this codec decrypts. */
  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  /** The data keys this codec encrypts workflows' payloads with, when it has a key store. */
  get dataKeys(): DataKeys | undefined {
    return this.#dataKeys;
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    if (payloads.length === 0) return payloads;
    // A payload with no workflow to belong to (the codec endpoint's /encode) stays under the master key.
    const subject = context?.workflowId;
    const { id, key } = this.#dataKeys && subject ? await this.#dataKeys.forSubject(subject) : this.#active;
    return payloads.map((payload) => {
      const plaintext = proto.temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { [METADATA_ENCODING_KEY]: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: encoder.encode(id) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const decoded: Payload[] = [];
    for (const payload of payloads) {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) {
        // `binary/null` carries no data: an absent argument is not a leak.
        if (!this.#refusePlaintext || (encoding && decoder.decode(encoding) === 'binary/null')) decoded.push(payload);
        else
          decoded.push({
            metadata: { [METADATA_ENCODING_KEY]: encoder.encode('json/plain') },
            data: encoder.encode(JSON.stringify(REFUSED_PLAINTEXT)),
          });
        continue;
      }
      const keyIdBytes = payload.metadata?.[KEY_ID_METADATA];
      const keyId = keyIdBytes ? decoder.decode(keyIdBytes) : '';
      decoded.push(decrypt(payload, keyId, await this.#keyFor(keyId)));
    }
    return decoded;
  }

  async #keyFor(keyId: string): Promise<Buffer> {
    if (keyId.startsWith(DATA_KEY_PREFIX)) {
      if (!this.#dataKeys)
        throw new CodecKeyUnknown(`payload names data key "${keyId}": this process has no key store (set ESIGN_KEY_STORE)`);
      return this.#dataKeys.byId(keyId);
    }
    const key = this.#keys.get(keyId);
    if (!key) throw new CodecKeyUnknown(`no codec key with id "${keyId}" (set ESIGN_CODEC_KEYS)`);
    return key;
  }
}

/** One payload's plaintext `Payload`, under `key`. */
function decrypt(payload: Payload, keyId: string, key: Buffer): Payload {
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
    if (entry.startsWith(DATA_KEY_PREFIX))
      throw new Error(`ESIGN_CODEC_KEYS: key ids starting "${DATA_KEY_PREFIX}" name data keys; rename it`);
    const key = Buffer.from(entry.slice(sep + 1), 'base64');
    if (key.length !== 32) throw new Error(`ESIGN_CODEC_KEYS: key "${entry.slice(0, sep)}" is not 32 bytes of base64`);
    return { id: entry.slice(0, sep), key };
  });
}

export function newCodecKeys(id = 'k1'): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}
