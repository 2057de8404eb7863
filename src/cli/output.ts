import type { ArchiveEvidence } from '../archive/evidence.js';

function text(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}

/** Prints rows as an aligned text table. */
export function table(rows: Record<string, unknown>[], columns?: string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? Object.keys(rows[0]!);
  const cell = text;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(cols.map((c) => c.toUpperCase())),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
  ].join('\n');
}

/** Key/value lines for one record. */
export function fields(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([k, v]) => `${k.padEnd(width)}  ${text(v)}`)
    .join('\n');
}

/** The evidence a completed archive carries, one row per sealed PDF (docs/evidence.md). */
export function evidenceTable(evidence: ArchiveEvidence | undefined): string {
  if (!evidence) return 'evidence: none recorded (archived before verification, or by an older worker)';
  const short = (h: string | null) => (h ? `${h.slice(0, 16)}…` : '-');
  const rows = [
    ...evidence.documents.map((d) => ({ file: d.entry, original: d.originalSha256, final: d.finalSha256, signature: d.signature })),
    ...(evidence.certificateOfCompletion
      ? [
          {
            file: evidence.certificateOfCompletion.entry,
            original: null,
            final: evidence.certificateOfCompletion.sha256,
            signature: evidence.certificateOfCompletion.signature,
          },
        ]
      : []),
  ].map((r) => ({
    file: r.file,
    seal: r.signature.result === 'valid' && r.signature.trusted === null ? 'valid (no trust anchor)' : r.signature.result,
    // ETSI EN 319 102-1's verdict and the PAdES level (older manifests have neither).
    indication: r.signature.validation
      ? [r.signature.validation.indication, r.signature.validation.subIndication].filter(Boolean).join(' / ')
      : null,
    level: r.signature.validation?.level ?? null,
    signer: r.signature.signer?.subject ?? null,
    signer_sha256: short(r.signature.signer?.sha256 ?? null),
    signed_at: r.signature.signingTime,
    // Older manifests have no time-stamp field at all.
    time_stamped_at: r.signature.timestamp?.time ?? null,
    // Until when the newest time-stamp can be validated: the evidence upkeep renews it before then.
    evidence_until: r.signature.validation?.evidenceExpiresAt ?? null,
    original_sha256: short(r.original),
    final_sha256: short(r.final),
  }));
  const t = evidence.auditTrail;
  const chain = !t ? '' : t.head ? `, chain head ${t.head}` : t.head === null ? ', not hash-chained' : '';
  const held = t?.problems?.length ? `; does not hold: ${t.problems.join('; ')}` : '';
  const trail = t ? `audit trail: ${t.entry}, ${t.events} events, sha256 ${t.sha256}${chain}${held}` : 'audit trail: none';
  return `${table(rows)}\n${trail}\npolicy: signatures ${evidence.policy.signatures}, certificate of completion ${evidence.policy.requireCompletionCertificate ? 'required' : 'optional'}`;
}
