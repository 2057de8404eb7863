import { createHash } from 'node:crypto';
import * as pkijs from 'pkijs';

/**
 * What was parsed from DER, remembered per process by the SHA-256 of the bytes: a worker checks the same CA's
 * OCSP responses, CRLs and certificates in every seal, and asn1js with pkijs's schemas is most of what a check
 * costs. Only the parse is remembered (pure, from those exact bytes); every verdict on what was parsed (dates,
 * signatures, which certificate) is still judged at each use. The parsed objects are shared, so callers only read
 * them. Small inputs only, and a bounded number, the oldest out first, so hostile files cannot fill memory.
 */
const MEMO = new Map<string, unknown>();
const MAX_ENTRIES = 256;
const MAX_BYTES = 64 * 1024;

export function parsedOnce<T>(kind: string, der: Uint8Array, parse: () => T): T {
  if (der.length > MAX_BYTES) return parse();
  const key = `${kind}:${createHash('sha256').update(der).digest('hex')}`;
  if (MEMO.has(key)) return MEMO.get(key) as T;
  const parsed = parse();
  MEMO.set(key, parsed);
  if (MEMO.size > MAX_ENTRIES) MEMO.delete(MEMO.keys().next().value!);
  return parsed;
}

interface Encodable {
  toSchema(): { toBER(sizeOnly?: boolean): ArrayBuffer };
}

/**
 * The DER of a structure read from bytes (a name, an algorithm, a key, a certificate), encoded once per object. The
 * remembered certificates above are the same objects in every check, and pkijs rebuilds its schema tree each time it
 * encodes one: comparing names and algorithms, and reading keys, did that for every seal. Only for structures the
 * checks read and never change; a structure being built (signing, tests) is encoded with toSchema() as usual.
 */
const ENCODED = new WeakMap<object, Buffer>();

export function encodedOnce(value: Encodable): Buffer {
  let der = ENCODED.get(value);
  if (!der) ENCODED.set(value, (der = Buffer.from(value.toSchema().toBER(false))));
  return der;
}

/** Certificates from DER (a /DSS's, a token's pool), each parsed once; those that cannot be read left out. */
export function readCertificates(ders: readonly Uint8Array[]): pkijs.Certificate[] {
  return ders.flatMap((der) => {
    try {
      return [parsedOnce('certificate', der, () => pkijs.Certificate.fromBER(der))];
    } catch {
      return [];
    }
  });
}
