// Identities an attacker holds: certificates the provider's CA really issued, but not for sealing (a TLS server's),
// or for sealing but not the provider's (another subscriber's). A SandboxSeal that seals with one of them, with the
// genuine CA and time-stamping authority, is what the trust checks must refuse.
import { webcrypto } from 'node:crypto';
import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { importPrivateKey, issueSigningCertificate, parseCertificates, randomSerial, type PemKeyPair } from '../../src/evidence/pki.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;

/** A TLS server certificate from `ca`: key usage keyEncipherment and digitalSignature, extended key usage serverAuth. */
export async function issueTlsServerCertificate(ca: PemKeyPair, host = 'portal.example'): Promise<PemKeyPair> {
  const [issuer] = parseCertificates(ca.certificate);
  const keys = await webcrypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true,
    ['sign', 'verify'],
  );
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = randomSerial();
  cert.issuer = issuer!.subject;
  cert.subject = new pkijs.RelativeDistinguishedNames({
    typesAndValues: [new pkijs.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: host }) })],
  });
  cert.notBefore.value = new Date(Date.now() - 60_000);
  cert.notAfter.value = new Date(Date.now() + 365 * 24 * 3600 * 1000);
  await cert.subjectPublicKeyInfo.importKey(keys.publicKey);
  // digitalSignature (0) and keyEncipherment (2): what a TLS server's RSA key is for.
  const keyUsage = new asn1js.BitString({ valueHex: new Uint8Array([0xa0]), unusedBits: 5 });
  cert.extensions = [
    new pkijs.Extension({ extnID: '2.5.29.19', critical: true, extnValue: new pkijs.BasicConstraints({}).toSchema().toBER(false) }),
    new pkijs.Extension({ extnID: '2.5.29.15', critical: true, extnValue: keyUsage.toBER(false) }),
    new pkijs.Extension({
      extnID: '2.5.29.37',
      critical: false,
      extnValue: new pkijs.ExtKeyUsage({ keyPurposes: ['1.3.6.1.5.5.7.3.1'] }).toSchema().toBER(false),
    }),
  ];
  await cert.sign(await importPrivateKey(ca.privateKey), 'SHA-256');
  return {
    certificate: pem('CERTIFICATE', cert.toSchema().toBER(false)),
    privateKey: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
  };
}

/**
 * The genuine sandbox's PKI (its CA, its TSA) with another identity in the seal's place: `identity` is given the
 * CA's key pair and returns the certificate to seal with. The result seals as the sandbox does, time-stamps
 * with the genuine TSA and adds genuine revocation data.
 */
export async function sealWithOtherIdentity(genuineDir: string, identity: (ca: PemKeyPair) => Promise<PemKeyPair>): Promise<SandboxSeal> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-forged-seal-'));
  await cp(genuineDir, dir, { recursive: true });
  const { readFile } = await import('node:fs/promises');
  const ca = { certificate: await readFile(join(dir, 'ca.pem'), 'utf8'), privateKey: await readFile(join(dir, 'ca.key'), 'utf8') };
  const pair = await identity(ca);
  await writeFile(join(dir, 'seal.key'), pair.privateKey, { mode: 0o600 });
  await writeFile(join(dir, 'seal.pem'), pair.certificate);
  return SandboxSeal.open(dir);
}

/** Another subscriber of the same CA: a document-signing certificate of the very profile the provider's has. */
export const anotherSubscriber = (ca: PemKeyPair) => issueSigningCertificate(ca, { O: 'Mallory Ltd', CN: 'Mallory document seal' });
