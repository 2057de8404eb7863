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
 * a value is not remembered). An OCTET STRING's or BIT STRING's content that reads as one value is counted too, read
 * as asn1js reads it, BER and all (indefinite lengths, long tags): asn1js keeps such an encapsulated value in the tree
 * it builds. Content that runs past its end or leaves bytes over is plain bytes to asn1js too, one value; content in
 * a form this count does not follow is counted as over the limit, so a hostile encoding is never remembered.
 */
export function derNodes(der: Uint8Array, limit: number): number {
  let count = 0;
  // One value at `at`, before `to`: where it ends, or why it cannot be counted ('bad': not a value there; 'over').
  const value = (at: number, to: number, depth: number, ber: boolean): number | 'bad' | 'over' => {
    if (++count > limit) return 'over';
    if (depth > 64 || at + 2 > to) return 'bad';
    const tag = der[at++]!;
    if ((tag & 0x1f) === 0x1f) {
      if (!ber) return 'bad';
      // A long tag number: base-128 bytes, the last without its top bit.
      for (let n = 0; ; n++) {
        if (n > 8) return 'over';
        if (at >= to) return 'bad';
        if (!(der[at++]! & 0x80)) break;
      }
      if (at >= to) return 'bad';
    }
    let length = der[at++]!;
    if (length === 0x80) {
      if (!ber) return 'bad';
      if (!(tag & 0x20)) return 'over';
      // Indefinite: values up to the end-of-contents octets.
      for (;;) {
        if (at + 2 > to) return 'bad';
        if (der[at] === 0 && der[at + 1] === 0) return at + 2;
        const next = value(at, to, depth + 1, ber);
        if (typeof next !== 'number') return next;
        at = next;
      }
    }
    if (length & 0x80) {
      const n = length & 0x7f;
      if (n > (ber ? 8 : 4) || at + n > to) return 'bad';
      length = 0;
      for (let k = 0; k < n; k++) length = length * 256 + der[at++]!;
    }
    const end = at + length;
    if (end > to) return 'bad';
    if (tag & 0x20) {
      const inner = values(at, end, depth + 1, ber);
      if (inner !== 'ok') return inner;
    } else if ((tag === 0x04 || tag === 0x03) && end > at) {
      const before = count;
      const inner = values(tag === 0x03 ? at + 1 : at, end, depth + 1, true);
      if (inner === 'over') return inner;
      if (inner === 'bad') count = before; // plain bytes: one value
    }
    return end;
  };
  const values = (from: number, to: number, depth: number, ber: boolean): 'ok' | 'bad' | 'over' => {
    for (let at = from; at < to;) {
      const next = value(at, to, depth, ber);
      if (typeof next !== 'number') return next;
      at = next;
    }
    return 'ok';
  };
  return values(0, der.length, 0, false) === 'ok' ? count : limit + 1;
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
