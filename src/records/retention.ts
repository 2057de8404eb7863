/**
 * Retention and purge, pure (docs/records.md): when an archive's retention ends, whether it may be purged now, and
 * the tombstone that takes its manifest's place. Both archive stores and the purge activity use these, so the rule
 * is written once.
 */
import type { ArchiveManifest } from '../archive/manifest.js';
import type { HoldTarget, LegalHold, Retention } from '../definitions/records.js';
import { durationToMs } from '../util/duration.js';

/** The retention of an archive whose transaction names none, unless the worker is told another (`ESIGN_ARCHIVE_RETENTION`). */
export const DEFAULT_RETENTION = '10 years';

/** The retention of an archive made at `archivedAt`, with its period from the transaction or the worker's default. */
export function retentionOf(archivedAt: string, period: string | number, source: Retention['source']): Retention {
  return { period: String(period), until: new Date(Date.parse(archivedAt) + durationToMs(period)).toISOString(), source };
}

type Covered = Pick<ArchiveManifest, 'transactionId' | 'referenceId' | 'batchId'>;

/** The holds, standing, that keep this archive (a hold without `released` stands: the register's, or a target alone). */
export function holdsOn<H extends HoldTarget & Pick<LegalHold, 'released'>>(manifest: Covered, holds: readonly H[]): H[] {
  const covered = { transaction: manifest.transactionId, reference: manifest.referenceId, batch: manifest.batchId };
  return holds.filter((h) => !h.released && covered[h.scope] !== undefined && covered[h.scope] === h.target);
}

/** Why this archive may not be purged at `at`, or undefined. */
export function purgeRefusal(manifest: ArchiveManifest, holds: readonly LegalHold[], at: string): string | undefined {
  if (manifest.purged) return undefined;
  if (!manifest.retention) return 'it records no retention (archived before retention was recorded): kept';
  if (Date.parse(at) < Date.parse(manifest.retention.until)) return `its retention runs until ${manifest.retention.until}`;
  const held = holdsOn(manifest, holds);
  if (held.length > 0) return `held: ${held.map((h) => `${h.id} (${h.reason})`).join('; ')}`;
  return undefined;
}

/** The tombstone: what proves the archive existed and when it was destroyed, with nothing personal left in it. */
export function tombstoneOf(manifest: ArchiveManifest, at: string, walk?: string): ArchiveManifest {
  const renewed = (manifest.renewals ?? []).flatMap((r) =>
    r.documents.map((d) => ({ what: 'renewal' as const, bytes: d.bytes, sha256: d.sha256 })),
  );
  return {
    referenceId: manifest.referenceId,
    transactionId: manifest.transactionId,
    esignId: manifest.esignId,
    ...(manifest.batchId ? { batchId: manifest.batchId } : {}),
    zip: manifest.zip,
    documents: [],
    files: [],
    downloadedAt: manifest.downloadedAt,
    archivedAt: manifest.archivedAt,
    retention: manifest.retention!,
    purged: {
      at,
      ...(walk ? { walk } : {}),
      retention: manifest.retention!,
      destroyed: [
        { what: 'zip', bytes: manifest.zip.bytes, sha256: manifest.zip.sha256 },
        ...manifest.files.map((f) => ({ what: 'entry' as const, bytes: f.bytes, sha256: f.sha256 })),
        ...renewed,
      ],
    },
  };
}
