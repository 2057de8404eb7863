// A lower-level CMS builder than src/evidence/cms.ts `signCms`, for the corpus's variants: any digest algorithm,
// with or without the ESS signing-certificate-v2 (or naming another certificate, or v1), a signing-time attribute,
// embedded content, no signed attributes at all, and RFC 3161 tokens over any value, at any time, by any TSA.
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { contentInfoDer } from '../../src/evidence/cms.js';
import { OID, randomSerial } from '../../src/evidence/pki.js';
import { certDer, digest, HASH_OID, signRsa, type Hash, type Issued } from './pki.js';

export const SIGNING_TIME = '1.2.840.113549.1.9.5';
const SIGNING_CERTIFICATE_V1 = '1.2.840.113549.1.9.16.2.12';
/** The sandbox's TSA policy (packages/sandbox/src/seal.ts). */
export const TSA_POLICY = '2.25.324509471234506599763462635830418565645';

export type SignedAttributes =
  /** content-type, message-digest, signing-certificate-v2: what PAdES baseline wants. */
  | 'pades'
  /** content-type and message-digest only. */
  | 'no-ess'
  /** content-type, message-digest and signing-time, no ESS. */
  | 'signing-time-only'
  /** PAdES's three and a signing-time (which PAdES baseline forbids). */
  | 'pades+signing-time'
  /** The ESS signing-certificate (v1, SHA-1) in place of v2. */
  | 'ess-v1'
  /** No signed attributes: the signature is over the content itself. */
  | 'none';

export interface CmsOptions {
  signer: Issued;
  /** The digest of the content (with `hash`): what the message-digest attribute holds. */
  contentDigest: Uint8Array;
  /** The content itself, for `attributes: 'none'` (signed directly) or embedded (`embed`). */
  content?: Uint8Array;
  embed?: boolean;
  hash?: Hash;
  contentType?: string;
  attributes?: SignedAttributes;
  /** The certificate the ESS attribute names (default: the signer's). */
  essCertificate?: pkijs.Certificate;
  /** A DNS name beside the issuer's distinguished name in the ESS issuerSerial. */
  essIssuerDnsName?: string;
  /** The certificate the SignerIdentifier names (default: the signer's). */
  sidCertificate?: pkijs.Certificate;
  signingTime?: Date;
  /** Default: the signer's certificate and its chain. */
  certificates?: pkijs.Certificate[];
  /** Unsigned attributes, given the signature value (the signature time-stamp). */
  unsigned?: (signatureValue: Buffer) => Promise<pkijs.Attribute[]>;
  /** Flip a bit of the signature value after signing. */
  corrupt?: boolean;
}

function issuerSerial(cert: pkijs.Certificate, dnsName?: string): asn1js.Sequence {
  const names: asn1js.AsnType[] = [new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 4 }, value: [cert.issuer.toSchema()] })];
  if (dnsName) names.push(new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 2 }, valueHex: Buffer.from(dnsName, 'ascii') }));
  return new asn1js.Sequence({
    value: [new asn1js.Sequence({ value: names }), new asn1js.Integer({ valueHex: cert.serialNumber.valueBlock.valueHexView })],
  });
}

function signingCertificate(cert: pkijs.Certificate, version: 1 | 2, dnsName?: string): pkijs.Attribute {
  const id = new asn1js.Sequence({
    value: [new asn1js.OctetString({ valueHex: digest(version === 2 ? 'SHA-256' : 'SHA-1', certDer(cert)) }), issuerSerial(cert, dnsName)],
  });
  return new pkijs.Attribute({
    type: version === 2 ? OID.signingCertificateV2 : SIGNING_CERTIFICATE_V1,
    values: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [id] })] })],
  });
}

export function algorithm(hash: Hash): pkijs.AlgorithmIdentifier {
  return new pkijs.AlgorithmIdentifier({ algorithmId: HASH_OID[hash], algorithmParams: new asn1js.Null() });
}

/** A CMS SignedData (as a ContentInfo, DER) built as `options` say. */
export async function buildCms(options: CmsOptions): Promise<Buffer> {
  const hash = options.hash ?? 'SHA-256';
  const type = options.contentType ?? OID.data;
  const kind = options.attributes ?? 'pades';
  const cert = options.signer.cert;
  const sid = options.sidCertificate ?? cert;
  const attrs: pkijs.Attribute[] = [
    new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: type })] }),
    new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: options.contentDigest })] }),
  ];
  if (kind === 'signing-time-only' || kind === 'pades+signing-time' || options.signingTime) {
    attrs.push(new pkijs.Attribute({ type: SIGNING_TIME, values: [new asn1js.UTCTime({ valueDate: options.signingTime ?? new Date() })] }));
  }
  if (kind === 'pades' || kind === 'pades+signing-time')
    attrs.push(signingCertificate(options.essCertificate ?? cert, 2, options.essIssuerDnsName));
  if (kind === 'ess-v1') attrs.push(signingCertificate(options.essCertificate ?? cert, 1));

  const signedAttrs = kind === 'none' ? undefined : new pkijs.SignedAndUnsignedAttributes({ type: 0, attributes: attrs });
  let toSign: Uint8Array;
  if (signedAttrs) {
    const encoded = new Uint8Array(signedAttrs.toSchema().toBER(false));
    signedAttrs.encodedValue = encoded.slice().buffer;
    encoded[0] = 0x31;
    toSign = encoded;
  } else {
    if (!options.content) throw new Error('a CMS without signed attributes signs its content: give it');
    toSign = options.content;
  }
  const signed = signRsa(options.signer.key, hash, toSign);
  const value = Buffer.from(signed.value);
  if (options.corrupt) value[value.length >> 1]! ^= 0x01;
  const signerInfo = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: sid.issuer, serialNumber: sid.serialNumber }),
    digestAlgorithm: algorithm(hash),
    signatureAlgorithm: signed.algorithm,
    signature: new asn1js.OctetString({ valueHex: value }),
    ...(signedAttrs ? { signedAttrs } : {}),
  });
  const unsigned = options.unsigned ? await options.unsigned(value) : [];
  if (unsigned.length) signerInfo.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({ type: 1, attributes: unsigned });
  const signedData = new pkijs.SignedData({
    version: type === OID.data ? 1 : 3,
    digestAlgorithms: [algorithm(hash)],
    encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: type }),
    signerInfos: [signerInfo],
    certificates: options.certificates ?? [cert, ...options.signer.chain],
  });
  // One primitive OCTET STRING, as src/evidence/cms.ts writes embedded content (pkijs would split it).
  if (options.embed && options.content) signedData.encapContentInfo.eContent = new asn1js.OctetString({ valueHex: options.content });
  return contentInfoDer(signedData);
}

export interface TokenOptions {
  tsa: Issued;
  /** The stamped value's digest, with `imprintHash`. */
  imprint: Uint8Array;
  imprintHash?: Hash;
  genTime: Date;
  /** The hash of the token's own signature. */
  hash?: Hash;
  policy?: string;
  certificates?: pkijs.Certificate[];
  corrupt?: boolean;
}

/** An RFC 3161 TimeStampToken (ContentInfo, DER) as a TSA would issue it, by whichever `tsa`, at whichever time. */
export async function timestampToken(options: TokenOptions): Promise<Buffer> {
  const tstInfo = new pkijs.TSTInfo({
    version: 1,
    policy: options.policy ?? TSA_POLICY,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: HASH_OID[options.imprintHash ?? 'SHA-256'] }),
      hashedMessage: new asn1js.OctetString({ valueHex: options.imprint }),
    }),
    serialNumber: randomSerial(),
    genTime: new Date(Math.floor(options.genTime.getTime() / 1000) * 1000),
    accuracy: new pkijs.Accuracy({ seconds: 1 }),
  });
  const content = new Uint8Array(tstInfo.toSchema().toBER(false));
  const hash = options.hash ?? 'SHA-256';
  return buildCms({
    signer: options.tsa,
    contentType: OID.tstInfo,
    content,
    embed: true,
    contentDigest: digest(hash, content),
    hash,
    // The TSA's chain too (the sandbox's tokens carry its certificate alone): @libpdf/core asks for an OCSP response
    // only for a certificate whose issuer it has, and the corpus gives the TSA OCSP alone, so that the root's CRL
    // (which covers every certificate the root issued, the seal's too) is in a file only when a variant puts it there.
    certificates: options.certificates ?? [options.tsa.cert, ...options.tsa.chain],
    ...(options.corrupt ? { corrupt: true } : {}),
  });
}

/** The unsigned attribute that makes B-B a B-T: a time-stamp token over the signature value. */
export function signatureTimestampAttribute(token: Buffer): pkijs.Attribute {
  return new pkijs.Attribute({ type: OID.signatureTimeStampToken, values: [asn1js.fromBER(token).result] });
}
