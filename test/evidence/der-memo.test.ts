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

  it('counts nodes only through definite-length DER; anything else is not remembered', () => {
    expect(derNodes(manyNulls(3), 100)).toBe(4);
    const indefinite = Uint8Array.from([0x30, 0x80, 0x05, 0x00, 0x00, 0x00]);
    expect(derNodes(indefinite, 100)).toBe(101);
    expect(derNodes(Uint8Array.from([0x30, 0x05, 0x05, 0x00]), 100)).toBe(101); // runs past its end
  });
});
