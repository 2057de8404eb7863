import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { Digester } from './pdf-bytes.js';
import { validatePath } from './certificate-policy.js';
import { certificateDer, OID, type SigningIdentity } from './pki.js';

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
  /** The path from the signer to its anchor (signer first, anchor last) when it chains; else null. */
  chain: pkijs.Certificate[] | null;
  /** Why the signature or the chain failed. */
  message: string;
}

/**
 * Verifies signer 0 of `signedData` over `data` (the detached content, or
 * the data a time-stamp token stamps), given as bytes or as a Digester that
 * knows their digest (a large file's span, hashed as it streamed past), then
 * validates the signer's certification path to `trustAnchors` as RFC 5280
 * has it (`validatePath`: basic constraints, path length, key usage of each
 * CA, critical extensions, every date). pkijs's own chain check is not used:
 * it lets a path-length violation, a critical extension on the signer and a
 * TLS certificate through, and loops on cross-signed CAs
 * (test/evidence/evidence-certificate-policy.test.ts). A time-stamp token's path is
 * judged at its own genTime; `pool` adds certificates the signature does not
 * carry (the /DSS's). Never throws.
 */
export async function verifyCms(
  signedData: pkijs.SignedData,
  data: Uint8Array | Digester,
  trustAnchors: readonly pkijs.Certificate[],
  at: Date,
  pool: readonly pkijs.Certificate[] = [],
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
  const untrusted = trustAnchors.length > 0 ? false : null;
  // Without signed attributes pkijs would verify the signature over the placeholder itself, and with content of
  // its own (eContent) it would never ask for the digest: either way the signature would not be over the data.
  if (typeof data === 'function' && !signedData.signerInfos[0]?.signedAttrs) {
    return { signatureValid: false, trusted: untrusted, signer: null, chain: null, message: NOT_OVER_DATA };
  }
  const known = typeof data === 'function' ? { digester: data, asked: false } : undefined;
  let result: Partial<pkijs.SignedDataVerifyResult>;
  try {
    result = await signedData.verify(
      { signer: 0, data: (bytes ?? placeholderFor(known!)) as ArrayBuffer, checkChain: false, extendedMode: true },
      DIGESTS,
    );
    if (known && !known.asked && result.signatureVerified === true)
      result = { ...result, signatureVerified: false, message: NOT_OVER_DATA };
  } catch (err) {
    result = { ...(err as Partial<pkijs.SignedDataVerifyResult>), message: (err as Error).message };
  }
  const signer = result.signerCertificate ?? null;
  if (result.signatureVerified !== true || !signer) {
    return { signatureValid: false, trusted: untrusted, signer, chain: null, message: result.message ?? 'no reason given' };
  }
  if (trustAnchors.length === 0) return { signatureValid: true, trusted: null, signer, chain: null, message: '' };
  const carried = (signedData.certificates ?? []).filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate);
  const path = await validatePath(signer, [...carried, ...pool], trustAnchors, chainDate(signedData, at));
  if ('problem' in path) return { signatureValid: true, trusted: false, signer, chain: null, message: path.problem };
  return { signatureValid: true, trusted: true, signer, chain: path.chain, message: '' };
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

/** The date a path is judged at: a time-stamp token's own time (its genTime), else the date asked. */
function chainDate(signedData: pkijs.SignedData, at: Date): Date {
  const content = signedData.encapContentInfo;
  if (content.eContentType !== OID.tstInfo || !content.eContent) return at;
  let genTime = GEN_TIME.get(signedData);
  if (!genTime) GEN_TIME.set(signedData, (genTime = pkijs.TSTInfo.fromBER(content.eContent.getValue()).genTime));
  return genTime;
}
const GEN_TIME = new WeakMap<pkijs.SignedData, Date>();

/** Until when a certification path can still be validated: the earliest end among its certificates, anchor included. */
export function chainExpiry(chain: readonly pkijs.Certificate[]): Date {
  return new Date(Math.min(...chain.map((c) => c.notAfter.value.getTime())));
}

/**
 * Why a path (which validated at its token's time) cannot vouch for anything at `at`, or null when it can:
 * archival validation needs the time-stamping authority's path valid when a later time-stamp (or the check)
 * proves the token existed.
 */
export function outsideValidity(chain: readonly pkijs.Certificate[], at: Date): string | null {
  const ends = chainExpiry(chain);
  if (at.getTime() > ends.getTime()) return `its certificate chain ended ${ends.toISOString()}, before ${at.toISOString()}`;
  const starts = Math.max(...chain.map((c) => c.notBefore.value.getTime()));
  if (at.getTime() < starts) return `its certificate chain starts ${new Date(starts).toISOString()}, after ${at.toISOString()}`;
  return null;
}
