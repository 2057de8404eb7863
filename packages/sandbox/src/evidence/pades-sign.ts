import { createHash } from 'node:crypto';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import * as asn1js from 'asn1js';
import { PDFDocument } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { contentInfoDer, signCms } from '../../../../src/evidence/cms.js';
import { formatName, OID, type SigningIdentity } from '../../../../src/evidence/pki.js';
import type { TimestampAuthority } from '../../../../src/evidence/timestamp.js';

/** Room for a CMS with a 3072-bit signature, a two-certificate chain and a time-stamp token, with margin. */
const SIGNATURE_BYTES = 16_384;

/**
 * A CAdES-detached CMS signer for PAdES baseline B-B (ETSI EN 319 142-1):
 * signed attributes are content-type, message-digest and the ESS
 * signing-certificate-v2 that binds the signer's certificate; no signing-time
 * attribute (B-B puts the claimed time in the signature dictionary's /M).
 * With a time-stamping authority, the signature value is time-stamped and the
 * token added as an unsigned attribute: baseline B-T, whose time a validator
 * can trust instead of the claimed one.
 */
class CadesSigner extends Signer {
  readonly #identity: SigningIdentity;
  readonly #tsa: TimestampAuthority | undefined;

  constructor(identity: SigningIdentity, tsa: TimestampAuthority | undefined) {
    super();
    this.#identity = identity;
    this.#tsa = tsa;
  }

  override async sign(signedBytes: Buffer): Promise<Buffer> {
    const digest = createHash('sha256').update(signedBytes).digest();
    const signedData = await signCms(this.#identity, { type: OID.data, digest }, [this.#identity.certificate, ...this.#identity.chain]);
    if (this.#tsa) {
      const signer = signedData.signerInfos[0]!;
      const token = await this.#tsa.stamp(createHash('sha256').update(signer.signature.valueBlock.valueHexView).digest());
      signer.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({
        type: 1,
        attributes: [new pkijs.Attribute({ type: OID.signatureTimeStampToken, values: [asn1js.fromBER(token).result] })],
      });
    }
    return contentInfoDer(signedData);
  }
}

export interface SealOptions {
  reason: string;
  location: string;
  contactInfo: string;
  /** The claimed signing time (the signature dictionary's /M). */
  signingTime: Date;
  /** Time-stamps the signature (PAdES B-T); without one the seal is B-B. */
  timestampAuthority?: TimestampAuthority;
}

/**
 * Seals a PDF with an invisible PAdES signature of `identity` (B-T with a
 * time-stamping authority, else B-B): the whole file but the signature value
 * is covered, so any later byte changes it.
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
  return new SignPdf().sign(prepared, new CadesSigner(identity, options.timestampAuthority), options.signingTime);
}
