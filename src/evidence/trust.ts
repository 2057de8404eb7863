import { createHash } from 'node:crypto';
import type * as pkijs from 'pkijs';
import { encodedOnce } from './der-memo.js';
import { parseCertificates } from './pki.js';

/**
 * Whom the archive trusts, and for what. One anchor list for everything let any certificate under a trusted
 * root seal a whole completed ZIP (a TLS server certificate did, in review). So trust is given per role:
 *
 * - a **seal** must chain to `seal.anchors` and its public key must be one of `seal.pins` (the provider's
 *   sealing keys, by SPKI SHA-256; rotation lists the old key and the new);
 * - a **time-stamp** (the signature's, and every document time-stamp) must come from an authority that chains
 *   to `timestamping`, with the critical `timeStamping` extended key usage;
 * - **revocation data** (OCSP responses, CRLs) counts only when signed by the issuer of the certificate it is
 *   about, or by an OCSP responder that issuer delegated (`id-kp-OCSPSigning`), as RFC 5280 and RFC 6960 have
 *   it: a revocation signer is judged by whom it speaks for, never by a list of its own
 *   (docs/decisions/trust-per-role.md).
 */
export interface TrustPolicy {
  seal: {
    anchors: readonly pkijs.Certificate[];
    /** SPKI SHA-256 pins (lower-case hex) of the keys a seal may be made with; empty: any key under the anchors. */
    pins: readonly string[];
  };
  timestamping: readonly pkijs.Certificate[];
}

/** A policy that trusts `anchors` for every role and pins nothing: tests and `warn` only; `require` needs pins. */
export function trustAnchorsOnly(anchors: readonly pkijs.Certificate[]): TrustPolicy {
  return { seal: { anchors, pins: [] }, timestamping: anchors };
}

/** The SHA-256 of a certificate's SubjectPublicKeyInfo (RFC 7469's pin), lower-case hex. */
export function spkiSha256(cert: pkijs.Certificate): string {
  return createHash('sha256').update(encodedOnce(cert.subjectPublicKeyInfo)).digest('hex');
}

/**
 * Reads one pin as configured: `sha256/<base64>` (RFC 7469, as `openssl x509 -pubkey | openssl pkey -pubin
 * -outform der | openssl dgst -sha256 -binary | base64` prints it) or 64 hexadecimal digits. Throws with what is
 * wrong, for a configuration error that says what to do.
 */
export function parsePin(text: string): string {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return value.toLowerCase();
  const b64 = /^sha256\/([A-Za-z0-9+/]{43}=)$/.exec(value)?.[1];
  if (b64) return Buffer.from(b64, 'base64').toString('hex');
  throw new Error(`"${value}" is not an SPKI SHA-256 pin (sha256/<base64 of 32 bytes>, or 64 hexadecimal digits)`);
}

/** A pin as RFC 7469 writes it, `sha256/<base64>`. */
export function formatPin(hex: string): string {
  return `sha256/${Buffer.from(hex, 'hex').toString('base64')}`;
}

/**
 * The trust a provider publishes: its CA (PEM) for every role, its sealing keys pinned (`sha256/<base64>` or hex).
 * What a worker configured from a sandbox's `GET /sandbox/ca.pem` and `GET /sandbox/pins` trusts.
 */
export function providerTrust(provider: { caCertificate: string; sealPins: readonly string[] }): TrustPolicy {
  const anchors = parseCertificates(provider.caCertificate);
  return { seal: { anchors, pins: provider.sealPins.map(parsePin) }, timestamping: anchors };
}
