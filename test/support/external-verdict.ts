// What an independent validator (pyHanko: test/support/pyhanko.ts; EU DSS: test/support/dss.ts) says of one PDF,
// in ETSI EN 319 102-1's terms, so the adversarial corpus can hold our archive's verdicts to theirs.

/** One signature or time-stamp, as the external validator judged it. */
export interface ExternalSignatureVerdict {
  /** The signature field's name (pyHanko), or the validator's own id for the token (DSS). */
  id: string;
  /** A signature, a time-stamp (document or signature time-stamp), or an evidence record. */
  kind?: 'signature' | 'timestamp' | 'evidence-record';
  /** TOTAL_PASSED | INDETERMINATE | TOTAL_FAILED (| ERROR when the validator could not judge it at all). */
  indication: string;
  /** EN 319 102-1's sub-indication (HASH_FAILURE, NO_POE, ...), null when passed. */
  subIndication: string | null;
  /** A signature's PAdES baseline level or format (B-LTA, PAdES-BASELINE-LTA...), a time-stamp's type (DOCUMENT_TIMESTAMP...). */
  level?: string;
  /** Why this one is not acceptable. */
  errors?: string[];
  /** What the validator noted without it counting against the verdict. */
  warnings?: string[];
}

/** An external validator's verdict on one file. */
export interface ExternalVerdict {
  /** The file's base name. */
  file: string;
  /**
   * At least one signature, and every signature and time-stamp intact, valid and trusted, covering the whole file or
   * followed only by LTA updates (validation data and document time-stamps), its AdES indication PASSED.
   */
  accepted: boolean;
  /** Of the worst signature or time-stamp: TOTAL_PASSED | INDETERMINATE | TOTAL_FAILED | NO_SIGNATURE | ERROR (not judged). */
  indication: string;
  subIndication: string | null;
  /** Short human reasons, one per problem found (empty when accepted). */
  reasons: string[];
  /** What the validator warned about, not part of the verdict. */
  warnings: string[];
  signatures: ExternalSignatureVerdict[];
}
