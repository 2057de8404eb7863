import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { randomSerial, type SigningIdentity } from './pki.js';

const OCSP_BASIC = '1.3.6.1.5.5.7.48.1.1';
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A certificate authority's revocation service (RFC 6960 OCSP, RFC 5280
 * CRLs), answered in-process and signed by the CA itself (its own responder):
 * what a seal's validation data (PAdES B-LT) holds for each certificate the
 * CA issued. The sandbox revokes nothing, so every answer is "good" and every
 * CRL is empty; both say when they were made and until when they hold.
 */
export class RevocationAuthority {
  readonly #ca: SigningIdentity;
  readonly #validity: number;

  /** `validityDays`: how long a response or CRL holds (its nextUpdate). */
  constructor(ca: SigningIdentity, validityDays = 7) {
    this.#ca = ca;
    this.#validity = validityDays * DAY_MS;
  }

  get issuer(): pkijs.Certificate {
    return this.#ca.certificate;
  }

  /** Whether `cert` was issued by this authority (its issuer name and signature). */
  async issued(cert: pkijs.Certificate): Promise<boolean> {
    if (!pkijs.RelativeDistinguishedNames.prototype.isEqual.call(cert.issuer, this.#ca.certificate.subject)) return false;
    return cert.verify(this.#ca.certificate).catch(() => false);
  }

  /**
   * The answer to an OCSP request (DER, RFC 6960 over HTTP): "good" for a certificate among `issued`, "unknown"
   * for any other; malformedRequest (status 1) for bytes that are not a request.
   */
  async answer(request: Uint8Array, issued: readonly pkijs.Certificate[], at = new Date()): Promise<Buffer> {
    let certID: pkijs.CertID;
    try {
      const parsed = pkijs.OCSPRequest.fromBER(request);
      const first = parsed.tbsRequest.requestList[0];
      if (!first) throw new Error('no certificate asked about');
      certID = first.reqCert;
    } catch {
      return Buffer.from(new pkijs.OCSPResponse({ responseStatus: new asn1js.Enumerated({ value: 1 }) }).toSchema().toBER(false));
    }
    let known = false;
    for (const cert of issued) {
      if (certID.isEqual(await this.#certId(cert, certID.hashAlgorithm.algorithmId))) known = true;
    }
    return this.#respond(certID, known ? 'good' : 'unknown', at);
  }

  async #certId(cert: pkijs.Certificate, hashOid: string): Promise<pkijs.CertID> {
    const id = new pkijs.CertID();
    const hashAlgorithm = hashOid === '2.16.840.1.101.3.4.2.1' ? 'SHA-256' : 'SHA-1';
    await id.createForCertificate(cert, { hashAlgorithm, issuerCertificate: this.#ca.certificate });
    return id;
  }

  /** A successful OCSPResponse (DER) saying `cert` is good at `at`. */
  async ocsp(cert: pkijs.Certificate, at = new Date()): Promise<Buffer> {
    return this.#respond(await this.#certId(cert, ''), 'good', at);
  }

  async #respond(certID: pkijs.CertID, status: 'good' | 'unknown', at: Date): Promise<Buffer> {
    const basic = new pkijs.BasicOCSPResponse();
    basic.tbsResponseData.responderID = this.#ca.certificate.subject;
    basic.tbsResponseData.producedAt = whole(at);
    basic.tbsResponseData.responses.push(
      new pkijs.SingleResponse({
        certID,
        // good: [0] IMPLICIT NULL; unknown: [2] IMPLICIT NULL
        certStatus: new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: status === 'good' ? 0 : 2 } }),
        thisUpdate: whole(at),
        nextUpdate: whole(new Date(at.getTime() + this.#validity)),
      }),
    );
    basic.certs = [this.#ca.certificate];
    await basic.sign(this.#ca.privateKey, 'SHA-256');
    const response = new pkijs.OCSPResponse({
      responseStatus: new asn1js.Enumerated({ value: 0 }),
      responseBytes: new pkijs.ResponseBytes({
        responseType: OCSP_BASIC,
        response: new asn1js.OctetString({ valueHex: basic.toSchema().toBER(false) }),
      }),
    });
    return Buffer.from(response.toSchema().toBER(false));
  }

  /** The authority's CRL (DER): no certificate revoked, made at `at`. */
  async crl(at = new Date()): Promise<Buffer> {
    const crl = new pkijs.CertificateRevocationList({
      version: 1,
      issuer: this.#ca.certificate.subject,
      thisUpdate: new pkijs.Time({ type: 1, value: whole(at) }),
      nextUpdate: new pkijs.Time({ type: 1, value: whole(new Date(at.getTime() + this.#validity)) }),
    });
    crl.crlExtensions = new pkijs.Extensions({
      extensions: [new pkijs.Extension({ extnID: '2.5.29.20', extnValue: randomSerial(8).toBER(false) })],
    });
    await crl.sign(this.#ca.privateKey, 'SHA-256');
    return Buffer.from((crl.toSchema(true) as asn1js.Sequence).toBER(false));
  }
}

/** Whole seconds: GeneralizedTime without fractions, which every validator reads. */
const whole = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);
