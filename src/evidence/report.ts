/**
 * What the archive records of a completed ZIP's evidence (the manifest's `evidence`, the workflow result's
 * `archive.evidence`): plain types, in the terms of ETSI EN 319 102-1 and the PAdES baseline levels (EN 319 142-1).
 * Apart from the checks that produce them (./pades-verify.ts, src/archive/evidence.ts), so that a client reading a
 * result (the client package) needs no PKI library.
 */
import type { CertificateRef } from '../esign/evidence.js';

export type Indication = 'TOTAL_PASSED' | 'TOTAL_FAILED' | 'INDETERMINATE';
export type SubIndication =
  | 'FORMAT_FAILURE'
  | 'HASH_FAILURE'
  | 'SIG_CRYPTO_FAILURE'
  | 'NO_CERTIFICATE_CHAIN_FOUND'
  | 'CHAIN_CONSTRAINTS_FAILURE'
  | 'OUT_OF_BOUNDS_NO_POE'
  | 'NO_POE'
  | 'SIG_CONSTRAINTS_FAILURE'
  | 'CRYPTO_CONSTRAINTS_FAILURE_NO_POE'
  | 'REVOKED_NO_POE'
  | 'TRY_LATER';

/** `require`: a PDF that is not validly sealed fails the archive; `warn`: it is recorded and logged; `off`: not checked. */
export type SignaturePolicy = 'off' | 'warn' | 'require';

/** A signature as the manifest records it. */
export interface SignatureEvidence {
  result: 'valid' | 'invalid' | 'not-checked';
  problems: string[];
  signer: CertificateRef | null;
  /** The time the signer claims (the signature dictionary's /M). */
  signingTime: string | null;
  /** The signature's verified RFC 3161 time-stamp (PAdES B-T): a time a third party vouches for; null for B-B. */
  timestamp: { time: string; authority: CertificateRef } | null;
  subFilter: string | null;
  trusted: boolean | null;
  /** When the signer's certificate was judged: the time-stamp's time when it holds, else the time of archiving. */
  validatedAt?: string | null;
  /** The validation report an auditor reads (ETSI EN 319 102-1's vocabulary); absent when not checked. */
  validation?: ValidationReport;
}

/** One signature's validation, in the terms of ETSI EN 319 102-1 and the PAdES baseline levels (EN 319 142-1). */
export interface ValidationReport {
  /** B-B: signed; B-T: with a signature time-stamp; B-LT and B-LTA: with validation data and archive time-stamps. */
  level: 'B-B' | 'B-T' | 'B-LT' | 'B-LTA' | null;
  indication: Indication;
  subIndication: SubIndication | null;
  /** The time a third party vouches the signature existed at (the time-stamp's), null when none does. */
  time: string | null;
  /**
   * Until when the newest time-stamp can be validated (its authority's certificate, or the anchor's, ends): the
   * evidence upkeep renews it before then (docs/evidence.md). Absent in reports from before the upkeep.
   */
  evidenceExpiresAt?: string | null;
}

export interface DocumentEvidence {
  title: string;
  entry: string;
  bytes: number;
  /** What we uploaded (computed by the upload activity); null for a document the caller uploaded itself. */
  originalSha256: string | null;
  /** The provider's record of the original, from its audit trail. */
  providerOriginalSha256: string | null;
  finalSha256: string;
  signature: SignatureEvidence;
}

export interface ArchiveEvidence {
  policy: {
    signatures: SignaturePolicy;
    /** SHA-256 of each certificate a seal had to chain to. */
    trustAnchors: string[];
    /** The provider's sealing keys a seal had to be made with (`sha256/<base64>` of each SPKI); absent in manifests from before pinning. */
    sealPins?: string[];
    /** SHA-256 of each certificate a time-stamping authority had to chain to; absent in manifests from before. */
    timestampingAnchors?: string[];
    requireCompletionCertificate: boolean;
  };
  documents: DocumentEvidence[];
  certificateOfCompletion: { entry: string; bytes: number; sha256: string; signature: SignatureEvidence } | null;
  auditTrail: {
    entry: string;
    bytes: number;
    sha256: string;
    events: number;
    /** The hash chain's last hash (v2); null for an unchained (v1) trail. */
    head?: string | null;
    /** Why the chain, or the copy sealed in the certificate of completion, does not hold (refused under `require`). */
    problems?: string[];
  } | null;
  /** Entries that are neither a document we uploaded nor the provider's evidence (refused under `require`). */
  unaccounted?: string[];
}
