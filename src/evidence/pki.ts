import { createHash, randomBytes, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

// pkijs builds and signs X.509 and CMS structures; Node's WebCrypto does the cryptography.
pkijs.setEngine(
  'node-webcrypto',
  new pkijs.CryptoEngine({
    name: 'node-webcrypto',
    // pkijs types this as the DOM's Crypto, which Node's webcrypto implements (there is no DOM lib here).
    crypto: webcrypto as never,
  }),
);

/** RSA with SHA-256: what every PAdES validator (Adobe, poppler/NSS, EU DSS, OpenSSL) accepts. */
const RSA: webcrypto.RsaHashedKeyGenParams = {
  name: 'RSASSA-PKCS1-v1_5',
  modulusLength: 3072,
  publicExponent: new Uint8Array([1, 0, 1]),
  hash: 'SHA-256',
};

/**
 * A random positive INTEGER (a serial number, a CRL number) in minimal DER: the first byte in 0x40..0x7f, so it
 * is neither negative nor led by a zero byte (which DER forbids and OpenSSL refuses as "illegal padding").
 */
export function randomSerial(bytes = 16): asn1js.Integer {
  const serial = randomBytes(bytes);
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  return new asn1js.Integer({ valueHex: serial });
}

/** A certificate with its private key, as PEM (PKCS#8 for the key). */
export interface PemKeyPair {
  certificate: string;
  privateKey: string;
}

/** A signing identity: the signer's certificate and key, and the certificates above it (issuer first). */
export interface SigningIdentity {
  certificate: pkijs.Certificate;
  privateKey: CryptoKey;
  chain: pkijs.Certificate[];
}

/** What an auditor needs to recognise a certificate. */
export interface CertificateSummary {
  subject: string;
  issuer: string;
  serialNumber: string;
  /** SHA-256 of the DER certificate, lowercase hex: what `openssl x509 -fingerprint -sha256` prints, without colons. */
  sha256: string;
  notBefore: string;
  notAfter: string;
}

/** A distinguished name as attribute → value, e.g. `{ CN: 'Sandbox Seal', O: 'esign sandbox' }`. */
export type Name = Partial<Record<keyof typeof NAME_OIDS, string>>;

const NAME_OIDS = { CN: '2.5.4.3', O: '2.5.4.10', OU: '2.5.4.11', C: '2.5.4.6', ST: '2.5.4.8', L: '2.5.4.7' } as const;
const OID_NAMES = new Map<string, string>([
  ...Object.entries(NAME_OIDS).map(([k, v]) => [v, k] as [string, string]),
  ['1.2.840.113549.1.9.1', 'E'],
]);

/** Object identifiers of CMS and RFC 3161 (the signed-data structures, their attributes, SHA-256). */
export const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  /** RFC 3161: the content type of a time-stamp token. */
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  /** RFC 3161 appendix A: a SignerInfo's unsigned attribute holding a time-stamp of its signature value. */
  signatureTimeStampToken: '1.2.840.113549.1.9.16.2.14',
  sha256: '2.16.840.1.101.3.4.2.1',
} as const;

/** The certificate extensions (RFC 5280 4.2.1) this project writes and reads, by OID. */
export const EXT = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  subjectAltName: '2.5.29.17',
  issuerAltName: '2.5.29.18',
} as const;

/** Adobe's document-signing purpose (Adobe Authentic Documents Trust), which PDF validators look for. */
const EKU_DOCUMENT_SIGNING = '1.2.840.113583.1.1.5';
/** RFC 3161 2.3: a time-stamping authority's certificate has this purpose alone, in a critical extension. */
export const EKU_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';

/** What an end-entity certificate is for. */
export type Purpose = 'document-signing' | 'time-stamping';

const YEAR_MS = 365 * 24 * 3600 * 1000;

/** One attribute per RDN, most general first (C … CN), as certificates conventionally order them. */
function rdn(name: Name): pkijs.RelativeDistinguishedNames {
  const order = ['C', 'ST', 'L', 'O', 'OU', 'CN'] as const;
  const sets = order
    .filter((key) => name[key] !== undefined)
    .map((key) => {
      const value = name[key]!;
      const asn = key === 'C' ? new asn1js.PrintableString({ value }) : new asn1js.Utf8String({ value });
      return new asn1js.Set({ value: [new pkijs.AttributeTypeAndValue({ type: NAME_OIDS[key], value: asn }).toSchema()] });
    });
  // pkijs would put every attribute in one multi-valued RDN; parsing our own encoding keeps one per RDN.
  const der = new asn1js.Sequence({ value: sets }).toBER(false);
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(der).result });
}

/** `CN=Sandbox Seal, O=esign sandbox`: most specific first, as RFC 4514 prints names. */
export function formatName(name: pkijs.RelativeDistinguishedNames): string {
  return [...name.typesAndValues]
    .reverse()
    .map((tv) => {
      const value = (tv.value.valueBlock as { value?: unknown }).value;
      return `${OID_NAMES.get(tv.type) ?? tv.type}=${typeof value === 'string' ? value : ''}`;
    })
    .join(', ');
}

function extension(extnID: string, critical: boolean, value: { toSchema(): asn1js.AsnType } | asn1js.AsnType): pkijs.Extension {
  const schema = 'toSchema' in value ? value.toSchema() : value;
  return new pkijs.Extension({ extnID, critical, extnValue: schema.toBER(false) });
}

/** KeyUsage bits, most significant first: digitalSignature(0), nonRepudiation(1), …, keyCertSign(5), cRLSign(6). */
function keyUsage(bits: number[]): asn1js.BitString {
  let byte = 0;
  for (const b of bits) byte |= 0x80 >> b;
  const unused = 7 - Math.max(...bits);
  return new asn1js.BitString({ valueHex: new Uint8Array([byte]), unusedBits: unused });
}

async function keyPair(): Promise<CryptoKeyPair> {
  return await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
}

function publicKeyId(cert: pkijs.Certificate): Uint8Array {
  return createHash('sha1').update(cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest();
}

async function build(options: {
  subject: Name;
  issuer: pkijs.RelativeDistinguishedNames | null;
  issuerKeyId: Uint8Array | null;
  publicKey: CryptoKey;
  signingKey: CryptoKey;
  now: Date;
  years: number;
  /** Absent for a CA. */
  purpose?: Purpose;
}): Promise<pkijs.Certificate> {
  const ca = options.purpose === undefined;
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = randomSerial();
  cert.subject = rdn(options.subject);
  cert.issuer = options.issuer ?? rdn(options.subject);
  cert.notBefore = x509Time(new Date(options.now.getTime() - 60_000));
  cert.notAfter = x509Time(new Date(options.now.getTime() + options.years * YEAR_MS));
  await cert.subjectPublicKeyInfo.importKey(options.publicKey);
  const keyId = publicKeyId(cert);
  cert.extensions = [
    extension(EXT.basicConstraints, true, new pkijs.BasicConstraints(ca ? { cA: true, pathLenConstraint: 0 } : {})),
    extension(EXT.keyUsage, true, ca ? keyUsage([5, 6]) : keyUsage([0, 1])),
    extension(EXT.subjectKeyId, false, new asn1js.OctetString({ valueHex: keyId })),
  ];
  if (options.purpose === 'document-signing') {
    cert.extensions.push(extension(EXT.extKeyUsage, false, new pkijs.ExtKeyUsage({ keyPurposes: [EKU_DOCUMENT_SIGNING] })));
  } else if (options.purpose === 'time-stamping') {
    cert.extensions.push(extension(EXT.extKeyUsage, true, new pkijs.ExtKeyUsage({ keyPurposes: [EKU_TIME_STAMPING] })));
  }
  if (options.issuerKeyId) {
    cert.extensions.push(
      extension(
        EXT.authorityKeyId,
        false,
        new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: options.issuerKeyId }) }),
      ),
    );
  }
  await cert.sign(options.signingKey, 'SHA-256');
  return cert;
}

function pem(label: string, der: ArrayBuffer | Uint8Array): string {
  const b64 = Buffer.from(der instanceof Uint8Array ? der : new Uint8Array(der)).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

function pemBlocks(text: string, label: string): Buffer[] {
  const re = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+?)-----END ${label}-----`, 'g');
  return [...text.matchAll(re)].map((m) => Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
}

async function toPem(cert: pkijs.Certificate, key: CryptoKey): Promise<PemKeyPair> {
  return {
    certificate: pem('CERTIFICATE', cert.toSchema().toBER(false)),
    privateKey: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', key)),
  };
}

/** A self-signed root CA (the sandbox's, or a test's "other" CA). */
export async function createCertificateAuthority(subject: Name, now = new Date(), years = 10): Promise<PemKeyPair> {
  const keys = await keyPair();
  const cert = await build({
    subject,
    issuer: null,
    issuerKeyId: null,
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    now,
    years,
  });
  return toPem(cert, keys.privateKey);
}

/**
 * An end-entity certificate issued by `ca`: digital signature and
 * non-repudiation, for the document-signing purpose (a seal) or for
 * time-stamping (a TSA).
 */
export async function issueSigningCertificate(
  ca: PemKeyPair,
  subject: Name,
  now = new Date(),
  years = 3,
  purpose: Purpose = 'document-signing',
): Promise<PemKeyPair> {
  const [issuer] = parseCertificates(ca.certificate);
  if (!issuer) throw new Error('the CA certificate is not PEM');
  const keys = await keyPair();
  const cert = await build({
    subject,
    issuer: issuer.subject,
    issuerKeyId: publicKeyId(issuer),
    publicKey: keys.publicKey,
    signingKey: await importPrivateKey(ca.privateKey),
    now,
    years,
    purpose,
  });
  return toPem(cert, keys.privateKey);
}

export async function importPrivateKey(text: string): Promise<CryptoKey> {
  const [der] = pemBlocks(text, 'PRIVATE KEY');
  if (!der) throw new Error('no PKCS#8 PRIVATE KEY block in the key');
  return webcrypto.subtle.importKey('pkcs8', der, RSA, false, ['sign']);
}

/** Every certificate in a PEM bundle (a trust-anchor file may hold several). */
export function parseCertificates(text: string): pkijs.Certificate[] {
  return pemBlocks(text, 'CERTIFICATE').map((der) => pkijs.Certificate.fromBER(der));
}

/** A signing identity from PEM: the signer's pair and the certificates above it (issuer first). */
export async function loadSigningIdentity(signer: PemKeyPair, chainPem: readonly string[]): Promise<SigningIdentity> {
  const [certificate] = parseCertificates(signer.certificate);
  if (!certificate) throw new Error('the signing certificate is not PEM');
  return { certificate, privateKey: await importPrivateKey(signer.privateKey), chain: chainPem.flatMap(parseCertificates) };
}

export function certificateDer(cert: pkijs.Certificate): Buffer {
  return Buffer.from(cert.toSchema().toBER(false));
}

export function summarize(cert: pkijs.Certificate): CertificateSummary {
  return {
    subject: formatName(cert.subject),
    issuer: formatName(cert.issuer),
    serialNumber: Buffer.from(cert.serialNumber.valueBlock.valueHexView).toString('hex'),
    sha256: derSha256(cert),
    notBefore: cert.notBefore.value.toISOString(),
    notAfter: cert.notAfter.value.toISOString(),
  };
}

/**
 * The SHA-256 of certificateDer(cert), remembered by what that encoding is made of: the signed part as read
 * (`tbsView`, which pkijs parses and encodes again), the signature algorithm's encoding and the signature value's.
 * The same three give the same DER, so the digest is safe to reuse; it saves that parse and encoding of the few
 * certificates (the seal's, the TSA's) every seal check summarizes. Bounded, the oldest out first.
 */
const DER_SHA256 = new Map<string, string>();
const DER_SHA256_MAX = 1_000;

/** The same, per certificate object: a remembered certificate is summarized in every check. */
const DER_SHA256_OF = new WeakMap<pkijs.Certificate, string>();

function derSha256(cert: pkijs.Certificate): string {
  let known = DER_SHA256_OF.get(cert);
  if (!known) DER_SHA256_OF.set(cert, (known = derSha256ByParts(cert)));
  return known;
}

function derSha256ByParts(cert: pkijs.Certificate): string {
  const tbs = cert.tbsView;
  // Without a signed part as read, certificateDer encodes no certificate of its own: nothing to remember.
  if (!tbs.byteLength) return createHash('sha256').update(certificateDer(cert)).digest('hex');
  const algorithm = Buffer.from(cert.signatureAlgorithm.toSchema().toBER(false));
  const length = (n: number) => Buffer.from(`${n}:`);
  const key = createHash('sha256')
    .update(length(tbs.byteLength))
    .update(tbs)
    .update(length(algorithm.length))
    .update(algorithm)
    .update(Buffer.from(cert.signatureValue.toBER(false)))
    .digest('hex');
  let digest = DER_SHA256.get(key);
  if (!digest) {
    digest = createHash('sha256').update(certificateDer(cert)).digest('hex');
    DER_SHA256.set(key, digest);
    if (DER_SHA256.size > DER_SHA256_MAX) DER_SHA256.delete(DER_SHA256.keys().next().value!);
  }
  return digest;
}

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050 (a CA made today may well outlive 2049). */
function x509Time(value: Date): pkijs.Time {
  return new pkijs.Time({ type: value.getUTCFullYear() < 2050 ? pkijs.TimeType.UTCTime : pkijs.TimeType.GeneralizedTime, value });
}
