import { createHash } from 'node:crypto';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import * as asn1js from 'asn1js';
import { PDFDocument } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { certificateDer, formatName, type SigningIdentity } from './pki.js';

const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
} as const;

/** Room for a CMS with a 3072-bit signature and a two-certificate chain, with margin. */
const SIGNATURE_BYTES = 16_384;

/**
 * A CAdES-detached CMS signer for PAdES baseline B-B (ETSI EN 319 142-1):
 * signed attributes are content-type, message-digest and the ESS
 * signing-certificate-v2 that binds the signer's certificate; no signing-time
 * attribute (B-B puts the claimed time in the signature dictionary's /M).
 * pkijs builds and signs the CMS; only the ESS attribute, which pkijs has no
 * class for, is assembled from asn1js types.
 */
class CadesSigner extends Signer {
  readonly #identity: SigningIdentity;

  constructor(identity: SigningIdentity) {
    super();
    this.#identity = identity;
  }

  override async sign(signedBytes: Buffer): Promise<Buffer> {
    const cert = this.#identity.certificate;
    const digest = createHash('sha256').update(signedBytes).digest();
    const certHash = createHash('sha256').update(certificateDer(cert)).digest();
    // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; ESSCertIDv2 with the default (SHA-256) hash and issuerSerial.
    const essCertId = new asn1js.Sequence({
      value: [
        new asn1js.OctetString({ valueHex: certHash }),
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
    const signingCertificateV2 = new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertId] })] });

    const signedData = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: cert.issuer, serialNumber: cert.serialNumber }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({
            type: 0,
            attributes: [
              new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.data })] }),
              new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: digest })] }),
              new pkijs.Attribute({ type: OID.signingCertificateV2, values: [signingCertificateV2] }),
            ],
          }),
        }),
      ],
      certificates: [cert, ...this.#identity.chain],
    });
    await signedData.sign(this.#identity.privateKey, 0, 'SHA-256');
    const contentInfo = new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) });
    return Buffer.from(contentInfo.toSchema().toBER(false));
  }
}

export interface SealOptions {
  reason: string;
  location: string;
  contactInfo: string;
  /** The claimed signing time (the signature dictionary's /M). */
  signingTime: Date;
}

/**
 * Seals a PDF with an invisible PAdES B-B signature of `identity`: the whole
 * file but the signature value is covered, so any later byte changes it.
 */
export async function sealPdf(pdf: Uint8Array, identity: SigningIdentity, options: SealOptions): Promise<Buffer> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  pdflibAddPlaceholder({
    pdfDoc: doc,
    reason: options.reason,
    location: options.location,
    contactInfo: options.contactInfo,
    name: formatName(identity.certificate.subject),
    signingTime: options.signingTime,
    signatureLength: SIGNATURE_BYTES,
    subFilter: SUBFILTER_ETSI_CADES_DETACHED,
    widgetRect: [0, 0, 0, 0],
  });
  // Object streams would hide the placeholder from signpdf's byte-range search.
  const prepared = Buffer.from(await doc.save({ useObjectStreams: false }));
  return new SignPdf().sign(prepared, new CadesSigner(identity), options.signingTime);
}
