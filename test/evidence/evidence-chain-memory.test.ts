// The signature check remembers a signer certificate that chained to a trust anchor (its chain's signatures and
// constraints do not change), and still judges every use at its own date: a remembered certificate outside its
// validity, a wrong anchor set or a broken signature is refused exactly as on the first check.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as pkijs from 'pkijs';
import { contentInfoDer, signCms, verifyCms } from '../../src/evidence/cms.js';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  OID,
  parseCertificates,
} from '../../src/evidence/pki.js';

const YEAR = 365 * 24 * 3600_000;

describe('a signer certificate that chained before', () => {
  it('is trusted again only within its dates, only under its anchor, and only over the signed data', async () => {
    const issuedAt = new Date('2026-01-01T00:00:00Z');
    const ca = await createCertificateAuthority({ CN: 'chain memory test CA' }, issuedAt, 10);
    const other = await createCertificateAuthority({ CN: 'another CA' }, issuedAt, 10);
    const signer = await issueSigningCertificate(ca, { CN: 'chain memory test seal' }, issuedAt, 3);
    const identity = await loadSigningIdentity(signer, [ca.certificate]);
    const data = randomBytes(2048);
    // As a verifier gets it: DER, read back.
    const signed = await signCms(identity, { type: OID.data, digest: createHash('sha256').update(data).digest() }, [
      identity.certificate,
      ...identity.chain,
    ]);
    const signedData = new pkijs.SignedData({ schema: pkijs.ContentInfo.fromBER(contentInfoDer(signed)).content });
    const anchors = parseCertificates(ca.certificate);
    const inside = new Date(issuedAt.getTime() + YEAR);

    // First check (whole chain), then again (remembered): the same answer.
    for (let i = 0; i < 2; i++)
      expect(await verifyCms(signedData, data, anchors, inside)).toMatchObject({ signatureValid: true, trusted: true });
    // After the signer's certificate ended, and before it began: not trusted, whether remembered or not.
    for (const at of [new Date(issuedAt.getTime() + 4 * YEAR), new Date(issuedAt.getTime() - YEAR)])
      expect(await verifyCms(signedData, data, anchors, at)).toMatchObject({ signatureValid: true, trusted: false });
    // Under another anchor: not trusted. Over other data: not valid.
    expect(await verifyCms(signedData, data, parseCertificates(other.certificate), inside)).toMatchObject({ trusted: false });
    expect(await verifyCms(signedData, randomBytes(2048), anchors, inside)).toMatchObject({ signatureValid: false, trusted: false });
    // And the remembered path still answers as the first did.
    expect(await verifyCms(signedData, data, anchors, inside)).toMatchObject({ signatureValid: true, trusted: true });
  });
});
