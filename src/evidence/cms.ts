import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { Digester } from './pdf-bytes.js';
import { certificateDer, type SigningIdentity } from './pki.js';

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

/**
 * The ESS signing-certificate-v2 attribute (RFC 5035), which binds the
 * signer's certificate into what is signed. PAdES and RFC 3161 both require
 * it; pkijs has no class for it, so it is assembled from asn1js types:
 * SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }, with the default (SHA-256) hash and issuerSerial.
 */
function signingCertificateV2(cert: pkijs.Certificate): pkijs.Attribute {
  const essCertId = new asn1js.Sequence({
    value: [
      new asn1js.OctetString({ valueHex: createHash('sha256').update(certificateDer(cert)).digest() }),
      new asn1js.Sequence({
        value: [
          new asn1js.Sequence({
            value: [new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 4 }, value: [cert.issuer.toSchema()] })],
          }),
          new asn1js.Integer({ valueHex: cert.serialNumber.valueBlock.valueHexView }),
        ],
      }),
    ],
  });
  return new pkijs.Attribute({
    type: OID.signingCertificateV2,
    values: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertId] })] })],
  });
}

/**
 * A CMS SignedData by `identity` over content whose SHA-256 is `digest`, with
 * the signed attributes content-type, message-digest and signing-certificate-v2.
 * `eContent` is embedded (a time-stamp token's TSTInfo); without it the
 * signature is detached (a PDF's signed byte ranges).
 */
export async function signCms(
  identity: SigningIdentity,
  content: { type: string; digest: Uint8Array; eContent?: Uint8Array },
  certificates: readonly pkijs.Certificate[],
): Promise<pkijs.SignedData> {
  const cert = identity.certificate;
  const signedData = new pkijs.SignedData({
    version: content.type === OID.data ? 1 : 3,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({
      eContentType: content.type,
      ...(content.eContent ? { eContent: new asn1js.OctetString({ valueHex: content.eContent }) } : {}),
    }),
    signerInfos: [
      new pkijs.SignerInfo({
        version: 1,
        sid: new pkijs.IssuerAndSerialNumber({ issuer: cert.issuer, serialNumber: cert.serialNumber }),
        signedAttrs: new pkijs.SignedAndUnsignedAttributes({
          type: 0,
          attributes: [
            new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: content.type })] }),
            new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: content.digest })] }),
            signingCertificateV2(cert),
          ],
        }),
      }),
    ],
    certificates: [...certificates],
  });
  // pkijs splits an embedded OctetString into a constructed (BER) one; RFC 3161 tokens are DER, and strict
  // validators (pyHanko) refuse the constructed form, so the content goes back in as one primitive string.
  if (content.eContent) signedData.encapContentInfo.eContent = new asn1js.OctetString({ valueHex: content.eContent });
  await signedData.sign(identity.privateKey, 0, 'SHA-256');
  return signedData;
}

/** SignedData wrapped in its ContentInfo, DER-encoded. */
export function contentInfoDer(signedData: pkijs.SignedData): Buffer {
  const contentInfo = new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) });
  return Buffer.from(contentInfo.toSchema().toBER(false));
}

/** What checking signer 0 of a SignedData found. */
export interface CmsVerification {
  /** The signature verifies over the data (and, for a time-stamp token, its imprint over the stamped data). */
  signatureValid: boolean;
  /** The signer chains to a trust anchor at the given time; null when no anchor was given. */
  trusted: boolean | null;
  signer: pkijs.Certificate | null;
  /** Why the signature or the chain failed, as pkijs says it. */
  message: string;
}

/**
 * Verifies signer 0 of `signedData` over `data` (the detached content, or
 * the data a time-stamp token stamps), given as bytes or as a Digester that
 * knows their digest (a large file's span, hashed as it streamed past). One
 * pass with the chain: a valid, trusted signature (the usual case) is hashed
 * and checked once. Only a failure is checked again without the chain, to
 * tell a broken signature from an untrusted signer. Never throws.
 */
export async function verifyCms(
  signedData: pkijs.SignedData,
  data: Uint8Array | Digester,
  trustAnchors: readonly pkijs.Certificate[],
  at: Date,
): Promise<CmsVerification> {
  // pkijs wants an ArrayBuffer holding exactly the data: a view into a larger buffer is copied out.
  // (A copy through the Uint8Array constructor: Buffer#slice is a view, whose .buffer is the whole pool.)
  // A Digester stands behind a one-byte placeholder that the engine below answers for.
  const bytes =
    typeof data === 'function'
      ? undefined
      : data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
        ? data.buffer
        : new Uint8Array(data).buffer;
  // Without signed attributes pkijs would verify the signature over the placeholder itself, and with content of
  // its own (eContent) it would never ask for the digest: either way the signature would not be over the data.
  if (typeof data === 'function' && !signedData.signerInfos[0]?.signedAttrs) {
    return { signatureValid: false, trusted: trustAnchors.length > 0 ? false : null, signer: null, message: NOT_OVER_DATA };
  }
  const attempt = async (anchors: readonly pkijs.Certificate[]): Promise<Partial<pkijs.SignedDataVerifyResult>> => {
    const known = typeof data === 'function' ? { digester: data, asked: false } : undefined;
    try {
      const result = await signedData.verify(
        {
          signer: 0,
          data: (bytes ?? placeholderFor(known!)) as ArrayBuffer,
          trustedCerts: [...anchors],
          checkChain: anchors.length > 0,
          checkDate: at,
          extendedMode: true,
        },
        DIGESTS,
      );
      if (known && !known.asked && result.signatureVerified === true)
        return { ...result, signatureVerified: false, message: NOT_OVER_DATA };
      return result;
    } catch (err) {
      return { ...(err as Partial<pkijs.SignedDataVerifyResult>), message: (err as Error).message };
    }
  };
  // A signer certificate that chained to these anchors before chains again: only the dates can change the answer,
  // and they are checked every time. Only for a chain the cached check judges exactly the same way (below).
  const reusable = trustAnchors.length > 0 && !signedData.crls?.length && !signedData.ocsps?.length;
  let alone: Partial<pkijs.SignedDataVerifyResult> | undefined;
  if (reusable) {
    alone = await attempt([]);
    const known = alone.signatureVerified === true && alone.signerCertificate ? chainedBefore(alone.signerCertificate, trustAnchors) : null;
    if (known && withinDates([alone.signerCertificate!, known], chainDate(signedData, at)))
      return { signatureValid: true, trusted: true, signer: alone.signerCertificate!, message: '' };
  }
  const chained = trustAnchors.length > 0 ? await attempt(trustAnchors) : undefined;
  if (chained?.signatureVerified === true && chained.signerCertificate && chained.signerCertificateVerified === true) {
    if (reusable) rememberChained(chained.signerCertificate, trustAnchors);
    return { signatureValid: true, trusted: true, signer: chained.signerCertificate, message: '' };
  }
  alone ??= await attempt([]);
  const signatureValid = alone.signatureVerified === true;
  return {
    signatureValid,
    trusted: trustAnchors.length > 0 ? false : null,
    signer: alone.signerCertificate ?? null,
    message: (signatureValid ? chained?.message : alone.message) ?? 'no reason given',
  };
}

const NOT_OVER_DATA = 'the signature is not over the signed bytes (no message digest of them is signed)';

/** Placeholders for data whose digest is known, each with its Digester and whether pkijs asked for it. */
const KNOWN = new WeakMap<ArrayBufferLike, { digester: Digester; asked: boolean }>();

function placeholderFor(known: { digester: Digester; asked: boolean }): ArrayBuffer {
  const placeholder = new ArrayBuffer(1);
  KNOWN.set(placeholder, known);
  return placeholder;
}

/**
 * pkijs's engine, but a digest of a placeholder comes from its Digester: pkijs hashes the data it verifies
 * itself, and takes the engine to use as an argument. Anything else (the signed attributes, certificates,
 * time-stamp contents) is hashed as before. A Digester that cannot give the digest throws, and the
 * verification fails with its reason.
 */
class KnownDigestEngine extends pkijs.CryptoEngine {
  override async digest(...[algorithm, data]: Parameters<pkijs.CryptoEngine['digest']>): Promise<ArrayBuffer> {
    const known = KNOWN.get(ArrayBuffer.isView(data) ? data.buffer : (data as ArrayBuffer));
    if (!known) return super.digest(algorithm, data);
    known.asked = true;
    const named = algorithm as string | { name: string };
    const digest = known.digester(typeof named === 'string' ? named : named.name);
    return new Uint8Array(digest).buffer;
  }
}
const DIGESTS = new KnownDigestEngine({ name: 'known-digests', crypto: webcrypto as never });

/**
 * Signer certificates that chained to a trust anchor, by the SHA-256 of the certificate and of that anchor. A
 * chain's signatures, names and constraints do not change; its dates are checked at each use, and a CMS that
 * carries revocation data of its own is always checked whole. Only a certificate issued by the anchor itself is
 * remembered: with intermediates between them, their dates would be unchecked.
 */
const CHAINED = new Map<string, true>();
const CHAINED_MAX = 1_000;
const DER_HASH = new WeakMap<pkijs.Certificate, string>();

/** A certificate's identity from the bytes it was read from (its signed part and signature): no re-encoding. */
function derHash(cert: pkijs.Certificate): string {
  let hash = DER_HASH.get(cert);
  if (!hash) {
    hash = createHash('sha256').update(cert.tbsView).update(cert.signatureValue.valueBlock.valueHexView).digest('hex');
    DER_HASH.set(cert, hash);
  }
  return hash;
}

function issuingAnchor(cert: pkijs.Certificate, anchors: readonly pkijs.Certificate[]): pkijs.Certificate | undefined {
  const issuer = Buffer.from(cert.issuer.toSchema().toBER(false));
  const found = anchors.filter((a) => Buffer.from(a.subject.toSchema().toBER(false)).equals(issuer));
  return found.length === 1 ? found[0] : undefined;
}

/** The anchor `cert` chained to before, if it did. */
function chainedBefore(cert: pkijs.Certificate, anchors: readonly pkijs.Certificate[]): pkijs.Certificate | null {
  const anchor = issuingAnchor(cert, anchors);
  return anchor && CHAINED.has(`${derHash(cert)}:${derHash(anchor)}`) ? anchor : null;
}

function rememberChained(cert: pkijs.Certificate, anchors: readonly pkijs.Certificate[]): void {
  const anchor = issuingAnchor(cert, anchors);
  if (!anchor) return;
  CHAINED.set(`${derHash(cert)}:${derHash(anchor)}`, true);
  if (CHAINED.size > CHAINED_MAX) CHAINED.delete(CHAINED.keys().next().value!);
}

/** The date pkijs judges a chain at: a time-stamp token's own time (its genTime), else the date asked. */
function chainDate(signedData: pkijs.SignedData, at: Date): Date {
  const content = signedData.encapContentInfo;
  if (content.eContentType !== OID.tstInfo || !content.eContent) return at;
  let genTime = GEN_TIME.get(signedData);
  if (!genTime) GEN_TIME.set(signedData, (genTime = pkijs.TSTInfo.fromBER(content.eContent.getValue()).genTime));
  return genTime;
}
const GEN_TIME = new WeakMap<pkijs.SignedData, Date>();

function withinDates(chain: readonly pkijs.Certificate[], at: Date): boolean {
  return chain.every((c) => c.notBefore.value.getTime() <= at.getTime() && at.getTime() <= c.notAfter.value.getTime());
}

/**
 * Until when a certificate that chained to `anchors` can still be validated: the earlier of its own end and
 * that of the anchor that issued it (the sandbox's chains have no intermediates).
 */
export function chainExpiry(cert: pkijs.Certificate, anchors: readonly pkijs.Certificate[]): Date {
  const issuer = Buffer.from(cert.issuer.toSchema().toBER(false));
  const ends = [cert.notAfter.value.getTime()];
  for (const anchor of anchors) {
    if (Buffer.from(anchor.subject.toSchema().toBER(false)).equals(issuer)) ends.push(anchor.notAfter.value.getTime());
  }
  return new Date(Math.min(...ends));
}

/**
 * Why `cert` (which chained to `anchors`) cannot vouch for anything at `at`, or null when it can. pkijs judges a
 * time-stamp token's chain at the token's own genTime whatever date it is given; archival validation needs the
 * chain valid when a later time-stamp (or the check) proves the token existed, which this adds.
 */
export function outsideValidity(cert: pkijs.Certificate, anchors: readonly pkijs.Certificate[], at: Date): string | null {
  const ends = chainExpiry(cert, anchors);
  if (at.getTime() > ends.getTime()) return `its certificate chain ended ${ends.toISOString()}, before ${at.toISOString()}`;
  if (at.getTime() < cert.notBefore.value.getTime())
    return `its certificate starts ${cert.notBefore.value.toISOString()}, after ${at.toISOString()}`;
  return null;
}
