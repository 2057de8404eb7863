import { createHash } from 'node:crypto';
import type { RevocationProvider } from '@libpdf/core';
import * as pkijs from 'pkijs';
import { fetchBounded, OutboundPolicy } from '../http/outbound.js';
import { timestampingCertificateProblems, validatePath } from './certificate-policy.js';
import { EXT } from './pki.js';
import { MAX_REVOCATION_BYTES } from './revocation-check.js';
import { spkiSha256, type TrustPolicy } from './trust.js';

const AIA = '1.3.6.1.5.5.7.1.1';
const OCSP_METHOD = '1.3.6.1.5.5.7.48.1';
const CRL_DP = '2.5.29.31';
const URI_NAME = 6;

export interface HttpRevocationOptions {
  /** An OCSP responder (RFC 6960, POST) asked first, for every certificate in scope. */
  ocspUrl?: string | undefined;
  /** A CRL (DER) fetched first, for every certificate in scope. */
  crlUrl?: string | undefined;
  /** From the request to the answer's last byte. */
  timeoutMs?: number;
  /** The largest answer read (default: what a seal check reads, 4 MiB); a longer one is cut off as it streams. */
  maxBytes?: number;
  /**
   * Whose revocation data is asked for at all: certificates on a path to the seal anchors (the seal itself only
   * with a pinned key) or to the time-stamping anchors (an authority only with the timeStamping purpose). Any other
   * certificate, one a caller planted in a document above all, gets no request. Without it only the configured URLs
   * are asked, and never one a certificate names: there is no telling whose certificate it is.
   */
  trust?: TrustPolicy | undefined;
  /**
   * Where URLs a certificate in scope names (AIA, CRL distribution points) may point besides the configured ones:
   * the worker's allow-list (ESIGN_ALLOWED_URLS' form). Empty: none is asked.
   */
  allowedUrls?: readonly string[] | undefined;
  /** Hosts of `allowedUrls` that may resolve to internal addresses (ESIGN_ALLOWED_INTERNAL_HOSTS). */
  internalHosts?: readonly string[] | undefined;
}

/** Policies and a pool shared by a provider and what `withCertificates` derives from it. */
interface Shared {
  configured: OutboundPolicy;
  named: OutboundPolicy;
  pool: readonly pkijs.Certificate[];
}

/**
 * Revocation data over HTTP for a renewal's validation data, and only for the certificates the archive trusts: the
 * configured responder and CRL (the sandbox's certificates name none), else the allow-listed ones a certificate
 * names. No redirect is followed, answers are bounded while they stream, each request has a deadline. An answer
 * that cannot be had is null: the renewal's own check then decides whether what it got is enough.
 */
export class HttpRevocationProvider implements RevocationProvider {
  readonly #options: HttpRevocationOptions;
  readonly #shared: Shared;
  readonly #scope = new Map<string, Promise<boolean>>();

  constructor(options: HttpRevocationOptions, shared?: Shared) {
    this.#options = options;
    const configured = [options.ocspUrl, options.crlUrl].filter((u): u is string => !!u).map((u) => new URL(u).origin);
    this.#shared = shared ?? {
      // What an operator configured may be internal (the sandbox in the dev stack, a service on the cluster network).
      configured: new OutboundPolicy({ allow: configured, internal: configured }),
      named: new OutboundPolicy({ allow: options.allowedUrls ?? [], internal: options.internalHosts ?? [] }),
      pool: [],
    };
  }

  /**
   * The same provider with `certificates` (a document's: its CMS, its time-stamps', its /DSS) to complete paths
   * with. They are never trusted for themselves: a path must still end at an anchor.
   */
  withCertificates(certificates: readonly Uint8Array[]): HttpRevocationProvider {
    const parsed: pkijs.Certificate[] = [];
    for (const der of certificates) {
      try {
        parsed.push(pkijs.Certificate.fromBER(der));
      } catch {
        // Not a certificate: completes no path.
      }
    }
    return new HttpRevocationProvider(this.#options, { ...this.#shared, pool: [...this.#shared.pool, ...parsed] });
  }

  async getOCSP(certDer: Uint8Array, issuerDer: Uint8Array): Promise<Uint8Array | null> {
    const targets = await this.#targets(certDer, issuerDer, 'ocsp');
    if (targets.length === 0) return null;
    const cert = pkijs.Certificate.fromBER(certDer);
    const ocsp = new pkijs.OCSPRequest();
    await ocsp.createForCertificate(cert, { hashAlgorithm: 'SHA-1', issuerCertificate: pkijs.Certificate.fromBER(issuerDer) });
    const body = Buffer.from(ocsp.toSchema(true).toBER(false));
    for (const { url, policy } of targets) {
      const answer = await this.#fetch(url, policy, { method: 'POST', body, contentType: 'application/ocsp-request' });
      if (answer && successful(answer)) return answer;
    }
    return null;
  }

  async getCRL(certDer: Uint8Array): Promise<Uint8Array | null> {
    for (const { url, policy } of await this.#targets(certDer, undefined, 'crl')) {
      const answer = await this.#fetch(url, policy, { method: 'GET' });
      if (answer) return answer;
    }
    return null;
  }

  /** Where to ask about `certDer`: nowhere when it is out of scope; the configured URL, then the allowed ones it names. */
  async #targets(
    certDer: Uint8Array,
    issuerDer: Uint8Array | undefined,
    kind: 'ocsp' | 'crl',
  ): Promise<{ url: string; policy: OutboundPolicy }[]> {
    const trust = this.#options.trust;
    if (trust && !(await this.#inScope(certDer, issuerDer, trust))) return [];
    const configured = kind === 'ocsp' ? this.#options.ocspUrl : this.#options.crlUrl;
    const targets = configured ? [{ url: configured, policy: this.#shared.configured }] : [];
    if (!trust) return targets;
    let named: string[];
    try {
      named = urlsOf(pkijs.Certificate.fromBER(certDer), kind);
    } catch {
      named = [];
    }
    for (const url of named) {
      try {
        this.#shared.named.check(url);
        targets.push({ url, policy: this.#shared.named });
      } catch {
        // Not on the allow-list: not asked, and nothing is sent to find out.
      }
    }
    return targets;
  }

  /** Whether `certDer` is one whose revocation the archive relies on: on the pinned seal's path, or a TSA's. */
  #inScope(certDer: Uint8Array, issuerDer: Uint8Array | undefined, trust: TrustPolicy): Promise<boolean> {
    const key = createHash('sha256')
      .update(certDer)
      .update(issuerDer ?? new Uint8Array())
      .digest('hex');
    let known = this.#scope.get(key);
    if (!known) {
      known = (async () => {
        try {
          const cert = pkijs.Certificate.fromBER(certDer);
          const pool = [...this.#shared.pool, ...(issuerDer ? [pkijs.Certificate.fromBER(issuerDer)] : [])];
          const pins = trust.seal.pins;
          return (
            (await onPath(cert, pool, trust.seal.anchors, (leaf) => pins.length === 0 || pins.includes(spkiSha256(leaf)))) ||
            (await onPath(cert, pool, trust.timestamping, (leaf) => timestampingCertificateProblems(leaf).length === 0))
          );
        } catch {
          return false;
        }
      })();
      this.#scope.set(key, known);
    }
    return known;
  }

  async #fetch(
    url: string,
    policy: OutboundPolicy,
    how: { method: 'GET' | 'POST'; body?: Buffer; contentType?: string },
  ): Promise<Uint8Array | null> {
    try {
      const answer = await fetchBounded(url, {
        method: how.method,
        ...(how.body ? { body: how.body, headers: { 'content-type': how.contentType! } } : {}),
        maxBytes: this.#options.maxBytes ?? MAX_REVOCATION_BYTES,
        timeoutMs: this.#options.timeoutMs ?? 10_000,
        policy,
      });
      return answer.status === 200 && answer.body.length > 0 ? new Uint8Array(answer.body) : null;
    } catch {
      return null;
    }
  }
}

/**
 * Whether `cert` is an anchor, a CA on a path to one, or a leaf under one that `leafFits`. A certificate's URLs are
 * worth asking only when a trusted CA wrote them. Judged at a time within its validity: whether a trusted CA issued
 * it does not change when it expires (a renewal still gathers data for an expired seal's chain).
 */
async function onPath(
  cert: pkijs.Certificate,
  pool: readonly pkijs.Certificate[],
  anchors: readonly pkijs.Certificate[],
  leafFits: (leaf: pkijs.Certificate) => boolean,
): Promise<boolean> {
  if (anchors.length === 0) return false;
  const der = Buffer.from(cert.toSchema().toBER(false));
  if (anchors.some((a) => der.equals(Buffer.from(a.toSchema().toBER(false))))) return true;
  const at = Math.min(Math.max(Date.now(), cert.notBefore.value.getTime()), cert.notAfter.value.getTime());
  const path = await validatePath(cert, pool, anchors, new Date(at));
  if ('problem' in path) return false;
  return isCa(cert) || leafFits(cert);
}

function isCa(cert: pkijs.Certificate): boolean {
  const bc = cert.extensions?.find((e) => e.extnID === EXT.basicConstraints)?.parsedValue as pkijs.BasicConstraints | undefined;
  return bc instanceof pkijs.BasicConstraints && bc.cA === true;
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
