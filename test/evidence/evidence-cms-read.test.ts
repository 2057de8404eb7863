// readSignedData (src/evidence/cms-read.ts) parses each certificate a CMS carries once per worker: what it returns
// must be what pkijs reads from the same bytes, for any CMS, and a changed certificate must never be taken for a
// remembered one.
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { beforeAll, expect, it } from 'vitest';
import { contentInfoDer, signCms, verifyCms } from '../../src/evidence/cms.js';
import { readSignedData } from '../../src/evidence/cms-read.js';
import {
  certificateDer,
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  OID,
  parseCertificates,
  type SigningIdentity,
} from '../../src/evidence/pki.js';

let identity: SigningIdentity;
let anchor: pkijs.Certificate;
const data = Buffer.from('the signed bytes of a document');
const digest = createHash('sha256').update(data).digest();

beforeAll(async () => {
  const ca = await createCertificateAuthority({ CN: 'Reader test CA' });
  const signer = await issueSigningCertificate(ca, { CN: 'Reader test seal' });
  identity = await loadSigningIdentity(signer, [ca.certificate]);
  anchor = parseCertificates(ca.certificate)[0]!;
});

async function sealDer(): Promise<Buffer> {
  const signed = await signCms(identity, { type: OID.data, digest }, [identity.certificate, ...identity.chain]);
  return contentInfoDer(signed);
}

/** What pkijs alone reads from the bytes. */
function plainRead(der: Uint8Array): pkijs.SignedData {
  const asn = asn1js.fromBER(der);
  if (asn.offset === -1) throw new Error(asn.result.error);
  const contentInfo = new pkijs.ContentInfo({ schema: asn.result });
  return new pkijs.SignedData({ schema: contentInfo.content });
}

it('reads what pkijs reads, and verifies the same', async () => {
  const der = await sealDer();
  const ours = readSignedData(der);
  const theirs = plainRead(der);
  expect(ours.certificates!.map((c) => certificateDer(c as pkijs.Certificate).toString('hex'))).toEqual(
    theirs.certificates!.map((c) => certificateDer(c as pkijs.Certificate).toString('hex')),
  );
  const encoded = (d: pkijs.SignedData) => Buffer.from((d.toSchema(true) as asn1js.Sequence).toBER());
  expect(encoded(ours).equals(encoded(theirs))).toBe(true);
  const verdict = await verifyCms(ours, data, [anchor], new Date());
  expect(verdict).toMatchObject({ signatureValid: true, trusted: true });
  expect(await verifyCms(readSignedData(der), Buffer.from('other bytes'), [anchor], new Date())).toMatchObject({ signatureValid: false });
});

it('parses a certificate once, and a certificate changed by one byte as the different certificate it is', async () => {
  const first = readSignedData(await sealDer());
  const second = readSignedData(await sealDer());
  expect(second.certificates![0]).toBe(first.certificates![0]);

  // The signer's certificate with one byte of its signature value flipped: the seal still parses, the certificate
  // is a new one, and it no longer chains to the anchor.
  const der = await sealDer();
  const cert = certificateDer(identity.certificate);
  const at = der.indexOf(cert);
  expect(at).toBeGreaterThan(0);
  der[at + cert.length - 1]! ^= 0x01;
  const tampered = readSignedData(der);
  expect(tampered.certificates![0]).not.toBe(first.certificates![0]);
  const verdict = await verifyCms(tampered, data, [anchor], new Date());
  expect(verdict.trusted).toBe(false);
});

it('reads a CMS it cannot cut (no certificates, BER lengths) whole, as pkijs does', async () => {
  const bare = contentInfoDer(await signCms(identity, { type: OID.data, digest }, []));
  expect(readSignedData(bare).certificates ?? []).toHaveLength(0);
  // With the signer's certificate given apart, it verifies.
  const alone = readSignedData(bare);
  alone.certificates = [identity.certificate];
  expect(await verifyCms(alone, data, [anchor], new Date())).toMatchObject({ signatureValid: true, trusted: true });

  // The outer SEQUENCE in BER's indefinite form: read whole, with its certificates.
  const der = await sealDer();
  const top = asn1js.fromBER(der).result as asn1js.Sequence;
  top.lenBlock.isIndefiniteForm = true;
  const indefinite = Buffer.from(top.toBER());
  expect(indefinite[1]).toBe(0x80);
  const read = readSignedData(indefinite);
  expect(read.certificates).toHaveLength(2);
  expect(await verifyCms(read, data, [anchor], new Date())).toMatchObject({ signatureValid: true, trusted: true });
});

it('refuses what is not SignedData, and bytes that are no DER, with the reason', () => {
  expect(() => readSignedData(Buffer.from([0x30, 0x03, 0x02, 0x01]))).toThrow();
  const data = new asn1js.Sequence({
    value: [
      new asn1js.ObjectIdentifier({ value: OID.data }),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [new asn1js.OctetString()] }),
    ],
  });
  expect(() => readSignedData(Buffer.from(data.toBER()))).toThrow(/not CMS SignedData/);
});

/** The seal's DER with SignedData's fields rearranged by `change` (asn1js blocks, re-encoded). */
async function rearranged(change: (fields: asn1js.AsnType[]) => asn1js.AsnType[]): Promise<Buffer> {
  const top = asn1js.fromBER(await sealDer()).result as asn1js.Sequence;
  const explicit = top.valueBlock.value[1] as asn1js.Constructed;
  const signed = explicit.valueBlock.value[0] as asn1js.Constructed;
  signed.valueBlock.value = change(signed.valueBlock.value);
  return Buffer.from(top.toBER());
}

it('reads certificates only where SignedData has them, as pkijs does', async () => {
  // After signerInfos: pkijs ignores the field, so the seal names no certificate to chain.
  const last = await rearranged((f) => [...f.slice(0, 3), ...f.slice(4), f[3]!]);
  expect(readSignedData(last).certificates ?? []).toHaveLength(plainRead(last).certificates?.length ?? 0);
  expect((await verifyCms(readSignedData(last), data, [anchor], new Date())).trusted).toBe(false);
  // Before encapContentInfo: not SignedData's schema, for both.
  const early = await rearranged((f) => [f[0]!, f[1]!, f[3]!, f[2]!, ...f.slice(4)]);
  expect(() => plainRead(early)).toThrow();
  expect(() => readSignedData(early)).toThrow();
});

it('spends the parse budget of the whole on the certificates it cuts out', async () => {
  // The signer and 400 copies of its CA: more ASN.1 nodes than asn1js parses at once.
  const many = contentInfoDer(
    await signCms(identity, { type: OID.data, digest }, [identity.certificate, ...Array.from({ length: 400 }, () => identity.chain[0]!)]),
  );
  expect(() => plainRead(many)).toThrow(/node count/);
  expect(() => readSignedData(many)).toThrow(/node count/);
});

it('reads a seal as a PDF carries it, zero-padded, with its certificates remembered', async () => {
  const padded = Buffer.concat([await sealDer(), Buffer.alloc(4096)]);
  const first = readSignedData(padded);
  expect(readSignedData(padded).certificates![0]).toBe(first.certificates![0]);
  expect(await verifyCms(first, data, [anchor], new Date())).toMatchObject({ signatureValid: true, trusted: true });
});
