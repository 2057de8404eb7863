/**
 * The codec's typed decode errors and its key's shape, apart so that ./data-keys.ts and ./aes-gcm-codec.ts share them
 * without importing each other.
 */
import { ValueError } from '@temporalio/common';

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

export interface CodecKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}
