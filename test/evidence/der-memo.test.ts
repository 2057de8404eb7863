// What a worker remembers between seal checks is bounded by what the parses hold, not only by their bytes: a few KiB
// of hostile DER can be thousands of asn1js nodes (about a kilobyte of heap each), and a /DSS or a CMS is anyone's to write.
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { describe, expect, it } from 'vitest';
import { derNodes, MAX_ENTRY_NODES, parsedOnce } from '../../src/evidence/der-memo.js';
import { certificateDer, createCertificateAuthority, parseCertificates } from '../../src/evidence/pki.js';

/** One SEQUENCE of `n` NULLs: 2 bytes of DER per node. */
const manyNulls = (n: number) =>
  new Uint8Array(new asn1js.Sequence({ value: Array.from({ length: n }, () => new asn1js.Null()) }).toBER(false));

describe('parsedOnce', () => {
  it('remembers a certificate: the same bytes give the same parsed object', async () => {
    const der = new Uint8Array(
      certificateDer(parseCertificates((await createCertificateAuthority({ CN: 'memo test CA' })).certificate)[0]!),
    );
    expect(derNodes(der, MAX_ENTRY_NODES)).toBeLessThan(400);
    const first = parsedOnce('certificate', der, () => pkijs.Certificate.fromBER(der));
    expect(parsedOnce('certificate', der, () => pkijs.Certificate.fromBER(der))).toBe(first);
  });

  it('parses a structure of more nodes than an entry may hold at each use, however few its bytes', () => {
    const der = manyNulls(9_500);
    expect(der.length).toBeLessThan(20 * 1024);
    expect(derNodes(der, MAX_ENTRY_NODES)).toBe(MAX_ENTRY_NODES + 1);
    const first = parsedOnce('test-nulls', der, () => asn1js.fromBER(der).result);
    expect(parsedOnce('test-nulls', der, () => asn1js.fromBER(der).result)).not.toBe(first);
  });

  it('counts the values an OCTET STRING or BIT STRING encapsulates, as asn1js reads them into its tree', () => {
    const wrapped = (tag: 'octet' | 'bit') => {
      const inner = manyNulls(9_500);
      const block =
        tag === 'octet' ? new asn1js.OctetString({ valueHex: inner }) : new asn1js.BitString({ valueHex: Uint8Array.from([0, ...inner]) });
      return new Uint8Array(block.toBER(false));
    };
    for (const tag of ['octet', 'bit'] as const) expect(derNodes(wrapped(tag), MAX_ENTRY_NODES)).toBe(MAX_ENTRY_NODES + 1);
    expect(derNodes(new Uint8Array(new asn1js.OctetString({ valueHex: Uint8Array.from([1, 2, 3]) }).toBER(false)), 100)).toBe(1);
  });

  it('counts encapsulated values read as asn1js reads them, BER and all: never fewer than the tree it builds', () => {
    const tlv = (tag: number, content: Uint8Array) => {
      const n = content.length;
      const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
      return Uint8Array.from([tag, ...length, ...content]);
    };
    const nulls = (n: number) => Array.from({ length: n }, () => [0x05, 0x00]).flat();
    const indefinite = Uint8Array.from([0x30, 0x80, ...nulls(2000), 0x00, 0x00]);
    const nested = Uint8Array.from([
      0x30,
      0x80,
      ...Array.from({ length: 600 }, () => [0x30, 0x80, 0x05, 0x00, 0x00, 0x00]).flat(),
      0x00,
      0x00,
    ]);
    const hostile = [
      tlv(0x04, indefinite),
      tlv(0x03, Uint8Array.from([0x00, ...indefinite])),
      tlv(0x04, tlv(0x30, Uint8Array.from([...nulls(2000), 0x1f, 0x21, 0x00]))), // a long tag number
      tlv(0x04, tlv(0x30, Uint8Array.from([...nulls(2000), 0x05, 0x85, 0, 0, 0, 0, 0]))), // five length octets
      tlv(0x04, tlv(0x04, nested)),
    ];
    // What asn1js keeps: every block, with the values an OCTET or BIT STRING encapsulates.
    const built = (block: asn1js.AsnType): number => {
      const inner = (block as { valueBlock?: { value?: unknown } }).valueBlock?.value;
      return 1 + (Array.isArray(inner) ? (inner as asn1js.AsnType[]).reduce((sum, b) => sum + built(b), 0) : 0);
    };
    for (const [i, der] of hostile.entries()) {
      const tree = built(asn1js.fromBER(der).result);
      expect(tree, `case ${i}: asn1js builds the tree`).toBeGreaterThan(1000);
      expect(derNodes(der, MAX_ENTRY_NODES), `case ${i}`).toBeGreaterThanOrEqual(tree);
    }
  });

  it('counts nodes only through definite-length DER; anything else is not remembered', () => {
    expect(derNodes(manyNulls(3), 100)).toBe(4);
    const indefinite = Uint8Array.from([0x30, 0x80, 0x05, 0x00, 0x00, 0x00]);
    expect(derNodes(indefinite, 100)).toBe(101);
    expect(derNodes(Uint8Array.from([0x30, 0x05, 0x05, 0x00]), 100)).toBe(101); // runs past its end
  });
});
