// The evidence a completed ZIP carries beyond the documents: the provider's
// audit trail (machine-readable) and its certificate of completion (a sealed
// PDF). The spec says only "all documents as one ZIP"; this layout is our
// decision (docs/spec-gaps.md, row 41) and docs/evidence.md describes it for
// auditors. The sandbox writes it and the archive activity reads it, both
// through this module.
import { z } from 'zod';

/** ZIP entry names reserved for evidence; documents never take them. */
export const COMPLETION_CERTIFICATE_ENTRY = 'certificate-of-completion.pdf';
export const AUDIT_TRAIL_ENTRY = 'audit-trail.json';
export const EVIDENCE_ENTRIES: readonly string[] = [COMPLETION_CERTIFICATE_ENTRY, AUDIT_TRAIL_ENTRY];

/** v2: events hash-chained (src/esign/audit-chain.ts), the trail embedded in the sealed certificate. v1 is read, never written. */
export const AUDIT_TRAIL_FORMAT = 'esign-audit-trail/v2';
export const AUDIT_TRAIL_FORMAT_V1 = 'esign-audit-trail/v1';
export const CHAIN_ALGORITHM = 'SHA-256/JCS';

export const AUDIT_EVENT_TYPES = [
  'created',
  'sent',
  'invitation_sent',
  'viewed',
  'one_time_code_sent',
  'authentication_passed',
  'authentication_failed',
  'authentication_locked',
  'tag_applied',
  'signed',
  'declined',
  'cancelled',
  'expired',
  'completed',
] as const;
export const AuditEventType = z.enum(AUDIT_EVENT_TYPES);
export type AuditEventType = z.infer<typeof AuditEventType>;

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256');

/** A certificate as evidence names it: subject and issuer (RFC 4514) and the SHA-256 of its DER. */
export const CertificateRef = z.object({ subject: z.string(), issuer: z.string(), sha256 });
export type CertificateRef = z.infer<typeof CertificateRef>;

export const AuditEvent = z.object({
  /** Order of recording, strictly increasing within a transaction. */
  seq: z.number().int().nonnegative(),
  at: z.iso.datetime({ offset: true }),
  type: AuditEventType,
  participantId: z.string().optional(),
  /** The client's address and browser, where the event came from one. */
  ip: z.string().optional(),
  userAgent: z.string().optional(),
  /** Event specifics: the authentication step, the tag, the message's channel. Never a secret. */
  detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  /** v2: the previous event's hash (the chain's genesis for the first). */
  prev: sha256.optional(),
  /** v2: SHA-256 of this event without `hash`, canonicalized (RFC 8785). */
  hash: sha256.optional(),
});
export type AuditEvent = z.infer<typeof AuditEvent>;

export const AuditTrail = z.object({
  format: z.enum([AUDIT_TRAIL_FORMAT, AUDIT_TRAIL_FORMAT_V1]),
  transaction: z.object({
    id: z.string(),
    esignId: z.string(),
    createdAt: z.iso.datetime({ offset: true }),
    completedAt: z.iso.datetime({ offset: true }),
  }),
  participants: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      email: z.string(),
      /** The checks the signer passed before seeing the documents, in order. */
      authentication: z.array(z.string()),
    }),
  ),
  documents: z.array(
    z.object({
      index: z.number().int().nonnegative(),
      title: z.string(),
      /** The document's entry in the ZIP. */
      entry: z.string(),
      original: z.object({ storagePath: z.string(), bytes: z.number().int().nonnegative(), sha256 }),
      final: z.object({ bytes: z.number().int().nonnegative(), sha256 }),
    }),
  ),
  events: z.array(AuditEvent),
  /** v2: how the events are chained, and the last event's hash (printed on the sealed certificate of completion). */
  chain: z.object({ algorithm: z.literal(CHAIN_ALGORITHM), head: sha256 }).optional(),
  /** The certificate the documents and the certificate of completion are sealed with. */
  seal: CertificateRef,
  /** The RFC 3161 authority that time-stamps each seal (PAdES B-T); absent when the seals are not time-stamped. */
  timestampAuthority: CertificateRef.optional(),
});
export type AuditTrail = z.infer<typeof AuditTrail>;
