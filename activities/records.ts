/**
 * The records retention's work on one archive (docs/records.md): purged, leaving a tombstone, once its retention
 * ended and no legal hold keeps it. The holds are read from the register just before, so a hold placed during a
 * walk stops the purge of what it covers.
 */
import type { ArchiveStore } from '../src/archive/store.js';
import type { LegalHold, PurgeInput, PurgeOutcome } from '../src/definitions/records.js';
import { holdsOn, tombstoneOf } from '../src/records/retention.js';

export interface RecordsDeps {
  archive: ArchiveStore;
  /** The standing and released holds (the register's answer); absent, the purge refuses to run. */
  holds?: () => Promise<LegalHold[]>;
}

export function createRecordsActivities(deps: RecordsDeps) {
  return {
    async purgeIfDue(input: PurgeInput): Promise<PurgeOutcome> {
      const { key } = input;
      const stored = await deps.archive.find(key);
      if (!stored) return { key, status: 'kept', detail: 'no archive' };
      const { manifest } = stored;
      if (manifest.purged) {
        // Purged before: what a crash after the tombstone left goes now.
        await deps.archive.purge(key, manifest, []);
        return { key, status: 'tombstone' };
      }
      if (!manifest.retention) return { key, status: 'kept', detail: 'no retention recorded' };
      // Not earlier than the workflow's clock (a test's simulated years), nor than this machine's (a late retry).
      const at = new Date(Math.max(Date.parse(input.asOf), Date.now())).toISOString();
      if (at < manifest.retention.until) return { key, status: 'kept', detail: `retained until ${manifest.retention.until}` };
      if (!deps.holds) throw new Error('the purge needs the legal holds register: the worker has no Temporal client for it');
      const holds = await deps.holds();
      const held = holdsOn(manifest, holds);
      if (held.length > 0) return { key, status: 'held', detail: held.map((h) => h.id).join(', ') };
      await deps.archive.purge(key, tombstoneOf(manifest, at), holds);
      return { key, status: 'purged' };
    },
  };
}
