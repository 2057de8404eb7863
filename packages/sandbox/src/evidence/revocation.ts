import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { randomSerial, type SigningIdentity } from '../../../../src/evidence/pki.js';

const OCSP_BASIC = '1.3.6.1.5.5.7.48.1.1';
const DAY_MS = 24 * 60 * 60 * 1000;

/** A revoked certificate: its serial number (hex, as encoded), when, and why (RFC 5280 5.3.1 CRLReason). */
export interface Revocation {
  serialNumber: string;
  at: string;
  reason: number;
}

/** RFC 5280 5.3.1: keyCompromise, what a provider declares when its sealing key has leaked. */
export const KEY_COMPROMISE = 1;

/**
 * A certificate authority's revocation service (RFC 6960 OCSP, RFC 5280
 * CRLs), answered in-process and signed by the CA itself (its own responder):
 * what a seal's validation data (PAdES B-LT) holds for each certificate the
 * CA issued. A certificate is "good" until it is revoked (`revoke`, the
 * sandbox's test control for a leaked sealing key); then its OCSP answers
 * say "revoked" and its CRL lists it, with the time and the reason. Both say
 * when they were made and until when they hold.
 */
export class RevocationAuthority {
  readonly #ca: SigningIdentity;
  readonly #validity: number;
  readonly #revoked = new Map<string, Revocation>();

  /** `validityDays`: how long a response or CRL holds (its nextUpdate); `revoked`: what was revoked before. */
  constructor(ca: SigningIdentity, validityDays = 7, revoked: readonly Revocation[] = []) {
    this.#ca = ca;
    this.#validity = validityDays * DAY_MS;
    for (const r of revoked) this.#revoked.set(r.serialNumber, r);
  }

  /** Revokes `cert` from `at`; returns every revocation, for the caller to keep. */
  revoke(cert: pkijs.Certificate, at = new Date(), reason = KEY_COMPROMISE): Revocation[] {
    const serialNumber = Buffer.from(cert.serialNumber.valueBlock.valueHexView).toString('hex');
    if (!this.#revoked.has(serialNumber)) this.#revoked.set(serialNumber, { serialNumber, at: whole(at).toISOString(), reason });
    return [...this.#revoked.values()];
  }

  /** The certificate's revocation as known at `at` (an answer made before a revocation says good, as a CRL does). */
  #revocationOf(cert: pkijs.Certificate, at: Date): Revocation | undefined {
    const revocation = this.#revoked.get(Buffer.from(cert.serialNumber.valueBlock.valueHexView).toString('hex'));
    return revocation && Date.parse(revocation.at) <= at.getTime() ? revocation : undefined;
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
    for (const cert of issued) {
      if (certID.isEqual(await this.#certId(cert, certID.hashAlgorithm.algorithmId))) {
        return this.#respond(certID, this.#revocationOf(cert, at) ?? 'good', at);
      }
    }
    return this.#respond(certID, 'unknown', at);
  }

  async #certId(cert: pkijs.Certificate, hashOid: string): Promise<pkijs.CertID> {
    const id = new pkijs.CertID();
    const hashAlgorithm = hashOid === '2.16.840.1.101.3.4.2.1' ? 'SHA-256' : 'SHA-1';
    await id.createForCertificate(cert, { hashAlgorithm, issuerCertificate: this.#ca.certificate });
    return id;
  }

  /** A successful OCSPResponse (DER) saying whether `cert` is good or revoked at `at`. */
  async ocsp(cert: pkijs.Certificate, at = new Date()): Promise<Buffer> {
    return this.#respond(await this.#certId(cert, ''), this.#revocationOf(cert, at) ?? 'good', at);
  }

  async #respond(certID: pkijs.CertID, status: 'good' | 'unknown' | Revocation, at: Date): Promise<Buffer> {
    const basic = new pkijs.BasicOCSPResponse();
    basic.tbsResponseData.responderID = this.#ca.certificate.subject;
    basic.tbsResponseData.producedAt = whole(at);
    basic.tbsResponseData.responses.push(
      new pkijs.SingleResponse({
        certID,
        certStatus: certStatus(status),
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
    const revoked = [...this.#revoked.values()].filter((r) => Date.parse(r.at) <= at.getTime());
    if (revoked.length > 0) {
      crl.revokedCertificates = revoked.map(
        (r) =>
          new pkijs.RevokedCertificate({
            userCertificate: new asn1js.Integer({ valueHex: Buffer.from(r.serialNumber, 'hex') }),
            revocationDate: new pkijs.Time({ type: 1, value: new Date(r.at) }),
            crlEntryExtensions: new pkijs.Extensions({
              extensions: [
                new pkijs.Extension({ extnID: '2.5.29.21', extnValue: new asn1js.Enumerated({ value: r.reason }).toBER(false) }),
              ],
            }),
          }),
      );
    }
    crl.crlExtensions = new pkijs.Extensions({
      extensions: [new pkijs.Extension({ extnID: '2.5.29.20', extnValue: randomSerial(8).toBER(false) })],
    });
    await crl.sign(this.#ca.privateKey, 'SHA-256');
    return Buffer.from((crl.toSchema(true) as asn1js.Sequence).toBER(false));
  }
}

/** RFC 6960 4.2.1 CertStatus: good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT NULL. */
function certStatus(status: 'good' | 'unknown' | Revocation): asn1js.BaseBlock {
  if (status === 'good' || status === 'unknown') {
    return new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: status === 'good' ? 0 : 2 } });
  }
  return new asn1js.Constructed({
    idBlock: { tagClass: 3, tagNumber: 1 },
    value: [
      new asn1js.GeneralizedTime({ valueDate: new Date(status.at) }),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [new asn1js.Enumerated({ value: status.reason })] }),
    ],
  });
}

/** Whole seconds: GeneralizedTime without fractions, which every validator reads. */
const whole = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);
