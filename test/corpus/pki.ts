// The adversarial corpus's PKI (test/corpus/variants.ts), made once per run: a root CA, the provider's pinned seal
// certificate, a time-stamping authority, and every certificate a variant needs that a real provider never issues
// (a TLS server certificate, an unpinned one, SHA-1 and RSA-1024, a leaf used as a CA, a path-length violation,
// expired, revoked, a TSA without its purpose, a foreign root). OCSP responses and CRLs are built here too, with what
// packages/sandbox/src/evidence/revocation.ts never writes: revoked entries, delegated responders, SHA-1 signatures, stale dates.
//
// Everything is signed by hand (node:crypto), not by WebCrypto: a WebCrypto RSA key is bound to one hash at import,
// and the corpus needs SHA-1 and SHA-256 signatures from the same keys. Keys are RSA-2048 (RSA-1024 where that is
// the point) and shared between certificates where the variant allows: the seal variants reuse the pinned key, so
// that the pin passes and only the flaw the variant is about can refuse it.
import { createHash, generateKeyPairSync, sign as rsaSign, webcrypto, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { randomSerial, type SigningIdentity } from '../../src/evidence/pki.js';
import { spkiSha256, type TrustPolicy } from '../../src/evidence/trust.js';

export type Hash = 'SHA-1' | 'SHA-256' | 'SHA-512';

export const HASH_OID: Record<Hash, string> = {
  'SHA-1': '1.3.14.3.2.26',
  'SHA-256': '2.16.840.1.101.3.4.2.1',
  'SHA-512': '2.16.840.1.101.3.4.2.3',
};
const RSA_WITH: Record<Hash, string> = {
  'SHA-1': '1.2.840.113549.1.1.5',
  'SHA-256': '1.2.840.113549.1.1.11',
  'SHA-512': '1.2.840.113549.1.1.13',
};
const NODE_HASH: Record<Hash, string> = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-512': 'sha512' };

export const EKU = {
  serverAuth: '1.3.6.1.5.5.7.3.1',
  timeStamping: '1.3.6.1.5.5.7.3.8',
  ocspSigning: '1.3.6.1.5.5.7.3.9',
  /** id-kp-documentSigning (RFC 9336). */
  documentSigning: '1.3.6.1.5.5.7.3.36',
  /** Adobe Authentic Documents Trust, what the sandbox's seal carries. */
  adobeAuthenticDocuments: '1.2.840.113583.1.1.5',
} as const;

/** KeyUsage bit numbers (RFC 5280 4.2.1.3). */
export const KU = { digitalSignature: 0, nonRepudiation: 1, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  bits: number;
}

/** A certificate with its key and the certificates above it, issuer first, the root last. */
export interface Issued {
  cert: pkijs.Certificate;
  key: KeyPair;
  chain: pkijs.Certificate[];
}

export function rsaKey(bits = 2048): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return { privateKey, publicKey, bits };
}

/** An RSA PKCS#1 v1.5 signature of `data` with `hash`, and the AlgorithmIdentifier that names it. */
export function signRsa(key: KeyPair, hash: Hash, data: Uint8Array): { value: Buffer; algorithm: pkijs.AlgorithmIdentifier } {
  return {
    value: rsaSign(NODE_HASH[hash], data, key.privateKey),
    algorithm: rsaAlgorithm(hash),
  };
}

export function rsaAlgorithm(hash: Hash): pkijs.AlgorithmIdentifier {
  return new pkijs.AlgorithmIdentifier({ algorithmId: RSA_WITH[hash], algorithmParams: new asn1js.Null() });
}

export function digest(hash: Hash, ...parts: Uint8Array[]): Buffer {
  const h = createHash(NODE_HASH[hash]);
  for (const p of parts) h.update(p);
  return h.digest();
}

export function der(value: { toSchema(): asn1js.AsnType } | asn1js.AsnType): Buffer {
  const schema = 'toSchema' in value ? value.toSchema() : value;
  return Buffer.from(schema.toBER(false));
}

export function certDer(cert: pkijs.Certificate): Buffer {
  return der(cert);
}

export function pem(label: string, bytes: Uint8Array): string {
  return `-----BEGIN ${label}-----\n${Buffer.from(bytes)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

/** A WebCrypto signing identity (SHA-256) for src/evidence's own signers (sealPdf, TimestampAuthority). */
export async function webIdentity(issued: Issued): Promise<SigningIdentity> {
  const privateKey = await webcrypto.subtle.importKey(
    'pkcs8',
    new Uint8Array(issued.key.privateKey.export({ type: 'pkcs8', format: 'der' })),
    { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return { certificate: issued.cert, privateKey, chain: issued.chain };
}

function name(cn: string, o = 'esign corpus'): pkijs.RelativeDistinguishedNames {
  const sets = [
    ['2.5.4.10', o],
    ['2.5.4.3', cn],
  ].map(
    ([type, value]) =>
      new asn1js.Set({
        value: [new pkijs.AttributeTypeAndValue({ type: type!, value: new asn1js.Utf8String({ value: value! }) }).toSchema()],
      }),
  );
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(new asn1js.Sequence({ value: sets }).toBER(false)).result });
}

function extension(extnID: string, critical: boolean, value: { toSchema(): asn1js.AsnType } | asn1js.AsnType): pkijs.Extension {
  const schema = 'toSchema' in value ? value.toSchema() : value;
  return new pkijs.Extension({ extnID, critical, extnValue: schema.toBER(false) });
}

function keyUsage(bits: readonly number[]): asn1js.BitString {
  const bytes = new Uint8Array(Math.max(...bits) >= 8 ? 2 : 1);
  for (const b of bits) bytes[b >> 3]! |= 0x80 >> (b & 7);
  return new asn1js.BitString({ valueHex: bytes, unusedBits: 7 - (Math.max(...bits) & 7) });
}

function x509Time(value: Date): pkijs.Time {
  return new pkijs.Time({ type: value.getUTCFullYear() < 2050 ? pkijs.TimeType.UTCTime : pkijs.TimeType.GeneralizedTime, value });
}

function keyId(key: KeyPair): Buffer {
  const spki = pkijs.PublicKeyInfo.fromBER(key.publicKey.export({ type: 'spki', format: 'der' }));
  return createHash('sha1').update(spki.subjectPublicKey.valueBlock.valueHexView).digest();
}

export interface CertificateOptions {
  cn: string;
  o?: string;
  key: KeyPair;
  /** Absent: self-signed. */
  issuer?: Issued;
  notBefore: Date;
  notAfter: Date;
  /** The hash of the issuer's signature over the certificate. */
  hash?: Hash;
  /** A CA (with its pathLenConstraint, if any), an end entity (cA false), or no basicConstraints at all. */
  basicConstraints: { ca: true; pathLen?: number } | { ca: false } | 'omit';
  keyUsage?: readonly number[];
  eku?: { purposes: readonly string[]; critical: boolean };
  /** id-pkix-ocsp-nocheck (RFC 6960 4.2.2.2.1): a delegated OCSP responder's certificate needs no revocation check. */
  ocspNoCheck?: boolean;
  /**
   * Where its revocation status is published (AIA id-ad-ocsp, CRL distribution point): pyHanko consults an OCSP
   * response only for a certificate whose AIA names a responder. The URLs are never fetched (.invalid).
   */
  revocationUrls?: boolean;
}

export function issue(options: CertificateOptions): Issued {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = randomSerial();
  cert.subject = name(options.cn, options.o);
  cert.issuer = options.issuer ? options.issuer.cert.subject : cert.subject;
  cert.notBefore = x509Time(options.notBefore);
  cert.notAfter = x509Time(options.notAfter);
  cert.subjectPublicKeyInfo = pkijs.PublicKeyInfo.fromBER(options.key.publicKey.export({ type: 'spki', format: 'der' }));
  const extensions: pkijs.Extension[] = [];
  const bc = options.basicConstraints;
  if (bc !== 'omit') {
    extensions.push(
      extension(
        '2.5.29.19',
        true,
        new pkijs.BasicConstraints(bc.ca ? { cA: true, ...(bc.pathLen === undefined ? {} : { pathLenConstraint: bc.pathLen }) } : {}),
      ),
    );
  }
  if (options.keyUsage) extensions.push(extension('2.5.29.15', true, keyUsage(options.keyUsage)));
  extensions.push(extension('2.5.29.14', false, new asn1js.OctetString({ valueHex: keyId(options.key) })));
  const signerKey = options.issuer?.key ?? options.key;
  extensions.push(
    extension(
      '2.5.29.35',
      false,
      new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: keyId(signerKey) }) }),
    ),
  );
  if (options.eku) {
    extensions.push(extension('2.5.29.37', options.eku.critical, new pkijs.ExtKeyUsage({ keyPurposes: [...options.eku.purposes] })));
  }
  if (options.ocspNoCheck) extensions.push(extension('1.3.6.1.5.5.7.48.1.5', false, new asn1js.Null()));
  if (options.revocationUrls) {
    const uri = (value: string) => new pkijs.GeneralName({ type: 6, value });
    extensions.push(
      extension(
        '1.3.6.1.5.5.7.1.1',
        false,
        new pkijs.InfoAccess({
          accessDescriptions: [
            new pkijs.AccessDescription({ accessMethod: '1.3.6.1.5.5.7.48.1', accessLocation: uri('http://ocsp.esign-corpus.invalid/') }),
          ],
        }),
      ),
      extension(
        '2.5.29.31',
        false,
        new pkijs.CRLDistributionPoints({
          distributionPoints: [new pkijs.DistributionPoint({ distributionPoint: [uri('http://crl.esign-corpus.invalid/root.crl')] })],
        }),
      ),
    );
  }
  cert.extensions = extensions;
  const hash = options.hash ?? 'SHA-256';
  cert.signature = rsaAlgorithm(hash);
  cert.signatureAlgorithm = rsaAlgorithm(hash);
  cert.tbsView = new Uint8Array(cert.encodeTBS().toBER(false));
  cert.signatureValue = new asn1js.BitString({ valueHex: signRsa(signerKey, hash, cert.tbsView).value });
  // Parsed back from DER, as any reader of the file will see it.
  const parsed = pkijs.Certificate.fromBER(certDer(cert));
  return { cert: parsed, key: options.key, chain: options.issuer ? [options.issuer.cert, ...options.issuer.chain] : [] };
}

// ---------------------------------------------------------------------------------------------------------------
// Revocation data

/** RFC 5280 CRLReason values the corpus uses. */
export const CRL_REASON = { unspecified: 0, keyCompromise: 1 } as const;

export interface OcspOptions {
  /** The certificate asked about, and its issuer (for the CertID). */
  cert: pkijs.Certificate;
  issuer: pkijs.Certificate;
  /** Who signs the response: the issuer itself, a delegated responder, or anyone. */
  responder: Issued;
  status: 'good' | 'revoked' | 'unknown';
  revokedAt?: Date;
  hash?: Hash;
  certIdHash?: 'SHA-1' | 'SHA-256';
  thisUpdate: Date;
  nextUpdate?: Date;
  producedAt?: Date;
  /** Certificates in the response (default: the responder's). */
  certs?: pkijs.Certificate[];
}

const whole = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

export async function ocspResponse(options: OcspOptions): Promise<Buffer> {
  const certID = new pkijs.CertID();
  await certID.createForCertificate(options.cert, { hashAlgorithm: options.certIdHash ?? 'SHA-1', issuerCertificate: options.issuer });
  const status =
    options.status === 'revoked'
      ? new asn1js.Constructed({
          idBlock: { tagClass: 3, tagNumber: 1 },
          value: [
            new asn1js.GeneralizedTime({ valueDate: whole(options.revokedAt ?? options.thisUpdate) }),
            new asn1js.Constructed({
              idBlock: { tagClass: 3, tagNumber: 0 },
              value: [new asn1js.Enumerated({ value: CRL_REASON.keyCompromise })],
            }),
          ],
        })
      : new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: options.status === 'good' ? 0 : 2 } });
  const basic = new pkijs.BasicOCSPResponse();
  basic.tbsResponseData.responderID = options.responder.cert.subject;
  basic.tbsResponseData.producedAt = whole(options.producedAt ?? options.thisUpdate);
  basic.tbsResponseData.responses.push(
    new pkijs.SingleResponse({
      certID,
      certStatus: status,
      thisUpdate: whole(options.thisUpdate),
      ...(options.nextUpdate ? { nextUpdate: whole(options.nextUpdate) } : {}),
    }),
  );
  basic.certs = options.certs ?? [options.responder.cert];
  const hash = options.hash ?? 'SHA-256';
  basic.tbsResponseData.tbsView = new Uint8Array((basic.tbsResponseData.toSchema(true) as asn1js.Sequence).toBER(false));
  const signed = signRsa(options.responder.key, hash, basic.tbsResponseData.tbsView);
  basic.signatureAlgorithm = signed.algorithm;
  basic.signature = new asn1js.BitString({ valueHex: signed.value });
  const response = new pkijs.OCSPResponse({
    responseStatus: new asn1js.Enumerated({ value: 0 }),
    responseBytes: new pkijs.ResponseBytes({
      responseType: '1.3.6.1.5.5.7.48.1.1',
      response: new asn1js.OctetString({ valueHex: basic.toSchema().toBER(false) }),
    }),
  });
  return der(response);
}

export interface CrlOptions {
  /** Who signs it (and whose name it carries as issuer). */
  issuer: Issued;
  revoked?: { cert: pkijs.Certificate; at: Date }[];
  hash?: Hash;
  thisUpdate: Date;
  nextUpdate: Date;
}

export function crl(options: CrlOptions): Buffer {
  const list = new pkijs.CertificateRevocationList({
    version: 1,
    issuer: options.issuer.cert.subject,
    thisUpdate: new pkijs.Time({ type: pkijs.TimeType.UTCTime, value: whole(options.thisUpdate) }),
    nextUpdate: new pkijs.Time({ type: pkijs.TimeType.UTCTime, value: whole(options.nextUpdate) }),
  });
  if (options.revoked?.length) {
    list.revokedCertificates = options.revoked.map(
      (r) =>
        new pkijs.RevokedCertificate({
          userCertificate: new asn1js.Integer({ valueHex: r.cert.serialNumber.valueBlock.valueHexView }),
          revocationDate: new pkijs.Time({ type: pkijs.TimeType.UTCTime, value: whole(r.at) }),
          crlEntryExtensions: new pkijs.Extensions({
            extensions: [
              new pkijs.Extension({
                extnID: '2.5.29.21',
                extnValue: new asn1js.Enumerated({ value: CRL_REASON.keyCompromise }).toBER(false),
              }),
            ],
          }),
        }),
    );
  }
  list.crlExtensions = new pkijs.Extensions({
    extensions: [
      new pkijs.Extension({ extnID: '2.5.29.20', extnValue: randomSerial(8).toBER(false) }),
      extension(
        '2.5.29.35',
        false,
        new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: keyId(options.issuer.key) }) }),
      ),
    ],
  });
  const hash = options.hash ?? 'SHA-256';
  list.signature = rsaAlgorithm(hash);
  list.signatureAlgorithm = rsaAlgorithm(hash);
  list.tbsView = new Uint8Array((list as unknown as { encodeTBS(): asn1js.Sequence }).encodeTBS().toBER(false));
  list.signatureValue = new asn1js.BitString({ valueHex: signRsa(options.issuer.key, hash, list.tbsView).value });
  return Buffer.from((list.toSchema(true) as asn1js.Sequence).toBER(false));
}

// ---------------------------------------------------------------------------------------------------------------
// The corpus PKI

const DAY = 24 * 3600 * 1000;
const YEAR = 365 * DAY;

export interface CorpusPki {
  now: Date;
  root: Issued;
  rootPem: string;
  /** The provider's seal: pinned, digitalSignature + nonRepudiation, EKU Adobe Authentic Documents. */
  seal: Issued;
  /** The TSA: EKU timeStamping alone, critical. */
  tsa: Issued;
  /** An OCSP responder the root delegated to (EKU OCSPSigning). */
  ocspDelegate: Issued;
  /** A "delegated" responder without the OCSPSigning purpose. */
  ocspDelegateNoEku: Issued;
  /** Variants' certificates. */
  tlsServer: Issued;
  unpinnedSeal: Issued;
  sha1Seal: Issued;
  sha1Rsa1024Seal: Issued;
  leafAsCa: Issued;
  leafAsCaSeal: Issued;
  pathLenIntermediate: Issued;
  pathLenSeal: Issued;
  expiredSeal: Issued;
  notYetValidSeal: Issued;
  revokedSeal: Issued;
  /** When revokedSeal was revoked (before anything it sealed). */
  revokedAt: Date;
  tsaAsSeal: Issued;
  sealWithoutDigitalSignature: Issued;
  sealWithDocumentSigningEku: Issued;
  tsaWithoutEku: Issued;
  tsaEkuNotCritical: Issued;
  tsaServerAuth: Issued;
  foreignRoot: Issued;
  foreignSeal: Issued;
  foreignTsa: Issued;
  trust: TrustPolicy;
}

/** The corpus's PKI, generated in well under a second or two (seven RSA keys). */
export function corpusPki(now = new Date()): CorpusPki {
  const rootKey = rsaKey();
  const sealKey = rsaKey();
  const tsaKey = rsaKey();
  const otherKey = rsaKey();
  const responderKey = rsaKey();
  const foreignKey = rsaKey();
  const weakKey = rsaKey(1024);
  const from = new Date(now.getTime() - 30 * DAY);
  const to = new Date(now.getTime() + 3 * YEAR);
  const sealProfile = {
    basicConstraints: { ca: false } as const,
    keyUsage: [KU.digitalSignature, KU.nonRepudiation],
    eku: { purposes: [EKU.adobeAuthenticDocuments], critical: false },
  };
  const tsaProfile = {
    basicConstraints: { ca: false } as const,
    keyUsage: [KU.digitalSignature, KU.nonRepudiation],
    eku: { purposes: [EKU.timeStamping], critical: true },
  };
  // pathLen 0, as the sandbox's root: no CA may stand between it and an end entity.
  const root = issue({
    cn: 'esign corpus root CA',
    key: rootKey,
    notBefore: new Date(now.getTime() - 2 * YEAR),
    notAfter: new Date(now.getTime() + 10 * YEAR),
    basicConstraints: { ca: true, pathLen: 0 },
    keyUsage: [KU.keyCertSign, KU.cRLSign],
  });
  const foreignRoot = issue({
    // The same name as ours: only the key tells them apart.
    cn: 'esign corpus root CA',
    key: foreignKey,
    notBefore: new Date(now.getTime() - 2 * YEAR),
    notAfter: new Date(now.getTime() + 10 * YEAR),
    basicConstraints: { ca: true, pathLen: 0 },
    keyUsage: [KU.keyCertSign, KU.cRLSign],
  });
  const under = (
    cn: string,
    key: KeyPair,
    profile: Omit<CertificateOptions, 'cn' | 'key' | 'notBefore' | 'notAfter'>,
    dates?: [Date, Date],
  ) => issue({ cn, key, issuer: root, notBefore: dates?.[0] ?? from, notAfter: dates?.[1] ?? to, revocationUrls: true, ...profile });

  const leafAsCa = under('esign corpus leaf used as a CA', otherKey, {
    basicConstraints: 'omit',
    keyUsage: [KU.digitalSignature, KU.keyCertSign],
  });
  const pathLenIntermediate = under('esign corpus intermediate under pathLen 0', otherKey, {
    basicConstraints: { ca: true },
    keyUsage: [KU.keyCertSign, KU.cRLSign],
  });
  const revokedAt = new Date(now.getTime() - 10 * DAY);
  const pki: CorpusPki = {
    now,
    root,
    rootPem: pem('CERTIFICATE', certDer(root.cert)),
    seal: under('esign corpus document seal', sealKey, sealProfile),
    // From a year back: a variant time-stamps a seal made weeks ago.
    tsa: under('esign corpus time-stamping authority', tsaKey, tsaProfile, [new Date(now.getTime() - YEAR), to]),
    ocspDelegate: under('esign corpus OCSP responder', responderKey, {
      basicConstraints: { ca: false },
      keyUsage: [KU.digitalSignature],
      eku: { purposes: [EKU.ocspSigning], critical: false },
      ocspNoCheck: true,
    }),
    ocspDelegateNoEku: under('esign corpus OCSP responder without its purpose', responderKey, {
      basicConstraints: { ca: false },
      keyUsage: [KU.digitalSignature],
    }),
    tlsServer: under('seal.esign.example', sealKey, {
      basicConstraints: { ca: false },
      keyUsage: [KU.digitalSignature, KU.keyEncipherment],
      eku: { purposes: [EKU.serverAuth], critical: false },
    }),
    unpinnedSeal: under('esign corpus another subscriber', otherKey, sealProfile),
    sha1Seal: under('esign corpus seal signed with SHA-1', sealKey, { ...sealProfile, hash: 'SHA-1' }),
    sha1Rsa1024Seal: under('esign corpus seal, RSA-1024 signed with SHA-1', weakKey, { ...sealProfile, hash: 'SHA-1' }),
    leafAsCa,
    leafAsCaSeal: issue({
      cn: 'esign corpus seal issued by a leaf',
      key: sealKey,
      issuer: leafAsCa,
      notBefore: from,
      notAfter: to,
      ...sealProfile,
    }),
    pathLenIntermediate,
    pathLenSeal: issue({
      cn: 'esign corpus seal below pathLen 0',
      key: sealKey,
      issuer: pathLenIntermediate,
      notBefore: from,
      notAfter: to,
      ...sealProfile,
    }),
    expiredSeal: under('esign corpus expired seal', sealKey, sealProfile, [
      new Date(now.getTime() - 2 * YEAR),
      new Date(now.getTime() - 30 * DAY),
    ]),
    notYetValidSeal: under('esign corpus seal not yet valid', sealKey, sealProfile, [new Date(now.getTime() + 30 * DAY), to]),
    revokedSeal: under('esign corpus revoked seal', sealKey, sealProfile, [new Date(now.getTime() - 60 * DAY), to]),
    revokedAt,
    tsaAsSeal: under('esign corpus TSA certificate used to seal', sealKey, tsaProfile),
    sealWithoutDigitalSignature: under('esign corpus seal for key encipherment only', sealKey, {
      ...sealProfile,
      keyUsage: [KU.keyEncipherment],
    }),
    sealWithDocumentSigningEku: under('esign corpus document seal (RFC 9336)', sealKey, {
      ...sealProfile,
      eku: { purposes: [EKU.documentSigning], critical: false },
    }),
    tsaWithoutEku: under('esign corpus TSA without timeStamping', tsaKey, {
      basicConstraints: { ca: false },
      keyUsage: [KU.digitalSignature, KU.nonRepudiation],
    }),
    tsaEkuNotCritical: under('esign corpus TSA, timeStamping not critical', tsaKey, {
      ...tsaProfile,
      eku: { purposes: [EKU.timeStamping], critical: false },
    }),
    tsaServerAuth: under('esign corpus TSA with serverAuth too', tsaKey, {
      ...tsaProfile,
      eku: { purposes: [EKU.timeStamping, EKU.serverAuth], critical: true },
    }),
    foreignRoot,
    foreignSeal: issue({
      cn: 'esign corpus document seal',
      key: sealKey,
      issuer: foreignRoot,
      notBefore: from,
      notAfter: to,
      ...sealProfile,
    }),
    foreignTsa: issue({
      cn: 'esign corpus time-stamping authority',
      key: tsaKey,
      issuer: foreignRoot,
      notBefore: from,
      notAfter: to,
      ...tsaProfile,
    }),
    trust: undefined as unknown as TrustPolicy,
  };
  pki.trust = { seal: { anchors: [root.cert], pins: [spkiSha256(pki.seal.cert)] }, timestamping: [root.cert] };
  return pki;
}
