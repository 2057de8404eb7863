import { createHash } from 'node:crypto';
import * as pkijs from 'pkijs';

/**
 * What was parsed from DER, remembered per process by the SHA-256 of the bytes: a worker checks the same CA's
 * OCSP responses, CRLs and certificates in every seal, and asn1js with pkijs's schemas is most of what a check
 * costs. Only the parse is remembered (pure, from those exact bytes); every verdict on what was parsed (dates,
 * signatures, which certificate) is still judged at each use. The parsed objects are shared, so callers only read
 * them (a reader that writes to the tree it reads, as pkijs's GeneralName does, must not be given one).
 *
 * Bounded by what a parse holds, not only by its bytes: asn1js keeps about a kilobyte of heap per node, and 19 KiB
 * of DER can be 9,500 nodes, so entries are counted in nodes (MAX_ENTRY_NODES each, MAX_NODES in all, the oldest
 * out first), and a structure larger than that is parsed at each use instead.
 */
const MEMO = new Map<string, { parsed: unknown; nodes: number }>();
const MAX_BYTES = 64 * 1024;
/** A certificate is about 150 nodes, an OCSP response about 200, a CRL five per revoked certificate. */
export const MAX_ENTRY_NODES = 4_096;
const MAX_NODES = 65_536;
let remembered = 0;

export function parsedOnce<T>(kind: string, der: Uint8Array, parse: () => T): T {
  if (der.length > MAX_BYTES) return parse();
  const key = `${kind}:${createHash('sha256').update(der).digest('hex')}`;
  const known = MEMO.get(key);
  if (known) return known.parsed as T;
  const parsed = parse();
  const nodes = derNodes(der, MAX_ENTRY_NODES);
  if (nodes <= MAX_ENTRY_NODES) {
    MEMO.set(key, { parsed, nodes });
    remembered += nodes;
    for (const [oldest, entry] of MEMO) {
      if (remembered <= MAX_NODES) break;
      MEMO.delete(oldest);
      remembered -= entry.nodes;
    }
  }
  return parsed;
}

/**
 * How many ASN.1 values `der` holds, each constructed one and everything inside it, counted without building
 * anything; `limit + 1` as soon as there are more, or when the bytes are not definite-length TLVs all through (such
 * a value is not remembered). An OCTET STRING's or BIT STRING's content that reads as values is counted too: asn1js
 * reads such encapsulated values into the tree it keeps.
 */
export function derNodes(der: Uint8Array, limit: number): number {
  let count = 0;
  const walk = (from: number, to: number, depth: number): 'ok' | 'bad' | 'over' => {
    for (let at = from; at < to;) {
      if (++count > limit) return 'over';
      if (depth > 64 || at + 2 > to) return 'bad';
      const tag = der[at]!;
      if ((tag & 0x1f) === 0x1f) return 'bad';
      let length = der[at + 1]!;
      let value = at + 2;
      if (length & 0x80) {
        const n = length & 0x7f;
        if (n === 0 || n > 4 || value + n > to) return 'bad';
        length = 0;
        for (let k = 0; k < n; k++) length = length * 256 + der[value++]!;
      }
      const end = value + length;
      if (end > to) return 'bad';
      if (tag & 0x20) {
        const inner = walk(value, end, depth + 1);
        if (inner !== 'ok') return inner;
      } else if ((tag === 0x04 || tag === 0x03) && end > value) {
        const before = count;
        const inner = walk(tag === 0x03 ? value + 1 : value, end, depth + 1);
        if (inner === 'over') return inner;
        if (inner === 'bad') count = before; // plain bytes: one value
      }
      at = end;
    }
    return 'ok';
  };
  return walk(0, der.length, 0) === 'ok' ? count : limit + 1;
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
