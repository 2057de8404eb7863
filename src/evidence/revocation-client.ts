import type { RevocationProvider } from '@libpdf/core';
import * as pkijs from 'pkijs';
import { request } from 'undici';

const AIA = '1.3.6.1.5.5.7.1.1';
const OCSP_METHOD = '1.3.6.1.5.5.7.48.1';
const CRL_DP = '2.5.29.31';
const URI_NAME = 6;
const MAX_ANSWER = 4 * 1024 * 1024;

export interface HttpRevocationOptions {
  /** An OCSP responder (RFC 6960, POST) asked for every certificate, before the one its certificate names. */
  ocspUrl?: string | undefined;
  /** A CRL (DER) fetched for every certificate, before the one its certificate names. */
  crlUrl?: string | undefined;
  timeoutMs?: number;
}

/**
 * Revocation data over HTTP for a renewal's validation data: the configured responder and CRL (the sandbox's
 * certificates name none), else the ones a certificate names (Authority Information Access, CRL Distribution
 * Points). An answer that cannot be had is null: the renewal's own check then decides whether what it got is
 * enough.
 */
export class HttpRevocationProvider implements RevocationProvider {
  readonly #options: HttpRevocationOptions;

  constructor(options: HttpRevocationOptions) {
    this.#options = options;
  }

  async getOCSP(certDer: Uint8Array, issuerDer: Uint8Array): Promise<Uint8Array | null> {
    const cert = pkijs.Certificate.fromBER(certDer);
    const ocsp = new pkijs.OCSPRequest();
    await ocsp.createForCertificate(cert, { hashAlgorithm: 'SHA-1', issuerCertificate: pkijs.Certificate.fromBER(issuerDer) });
    const body = Buffer.from(ocsp.toSchema(true).toBER(false));
    for (const url of [this.#options.ocspUrl, ...urlsOf(cert, 'ocsp')]) {
      if (!url) continue;
      const answer = await this.#fetch(url, { method: 'POST', body, contentType: 'application/ocsp-request' });
      if (answer && successful(answer)) return answer;
    }
    return null;
  }

  async getCRL(certDer: Uint8Array): Promise<Uint8Array | null> {
    const cert = pkijs.Certificate.fromBER(certDer);
    for (const url of [this.#options.crlUrl, ...urlsOf(cert, 'crl')]) {
      if (!url) continue;
      const answer = await this.#fetch(url, { method: 'GET' });
      if (answer) return answer;
    }
    return null;
  }

  async #fetch(url: string, how: { method: 'GET' | 'POST'; body?: Buffer; contentType?: string }): Promise<Uint8Array | null> {
    try {
      const response = await request(url, {
        method: how.method,
        ...(how.body ? { body: how.body, headers: { 'content-type': how.contentType! } } : {}),
        headersTimeout: this.#options.timeoutMs ?? 10_000,
        bodyTimeout: this.#options.timeoutMs ?? 10_000,
      });
      const bytes = Buffer.from(await response.body.arrayBuffer());
      return response.statusCode === 200 && bytes.length > 0 && bytes.length <= MAX_ANSWER ? new Uint8Array(bytes) : null;
    } catch {
      return null;
    }
  }
}

/**
 * An OCSP response that says `good`: a responder's "unauthorized", or "unknown" for a certificate another CA
 * issued (the sandbox's answers so), is no validation data, and the next source is asked.
 */
function successful(der: Uint8Array): boolean {
  try {
    const response = pkijs.OCSPResponse.fromBER(der);
    if (response.responseStatus.valueBlock.valueDec !== 0 || !response.responseBytes) return false;
    const basic = pkijs.BasicOCSPResponse.fromBER(response.responseBytes.response.valueBlock.valueHexView);
    return basic.tbsResponseData.responses.some((r) => (r.certStatus as { idBlock: { tagNumber: number } }).idBlock.tagNumber === 0);
  } catch {
    return false;
  }
}

/** The http(s) URLs a certificate names for its OCSP responder or CRL. */
function urlsOf(cert: pkijs.Certificate, kind: 'ocsp' | 'crl'): string[] {
  const urls: string[] = [];
  for (const ext of cert.extensions ?? []) {
    try {
      if (kind === 'ocsp' && ext.extnID === AIA) {
        const info = ext.parsedValue as pkijs.InfoAccess;
        for (const d of info.accessDescriptions) {
          if (d.accessMethod === OCSP_METHOD && d.accessLocation.type === URI_NAME) urls.push(String(d.accessLocation.value));
        }
      }
      if (kind === 'crl' && ext.extnID === CRL_DP) {
        const points = ext.parsedValue as pkijs.CRLDistributionPoints;
        for (const p of points.distributionPoints) {
          const names = Array.isArray(p.distributionPoint) ? p.distributionPoint : [];
          for (const n of names) if (n.type === URI_NAME) urls.push(String(n.value));
        }
      }
    } catch {
      // An extension that does not parse names nothing.
    }
  }
  return urls.filter((u) => /^https?:\/\//.test(u));
}
