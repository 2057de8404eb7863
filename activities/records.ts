/**
 * The records retention's work on one archive (docs/records.md): purged, leaving a tombstone, once its retention
 * ended and no legal hold keeps it. The holds are read from the register just before, so a hold placed during a
 * walk stops the purge of what it covers. And the register's holds mirrored on the archive's objects, where the
 * store can hold them itself (S3 Object Lock), so that the bucket too refuses to delete what a hold covers.
 */
import { Context } from '@temporalio/activity';
import type { ArchiveStore } from '../src/archive/store.js';
import type { LegalHold, LegalHoldsApplied, LegalHoldsChange, PurgeInput, PurgeOutcome } from '../src/definitions/records.js';
import { holdsOn, tombstoneOf } from '../src/records/retention.js';
import { whileHeartbeating } from './support/heartbeat.js';

export interface RecordsDeps {
  archive: ArchiveStore;
  /** The standing and released holds (the register's answer); absent, the purge refuses to run. */
  holds?: () => Promise<LegalHold[]>;
}

/** Archives whose manifests are read at once while the holds are applied. */
const PARALLEL = 8;

export function createRecordsActivities(deps: RecordsDeps) {
  return {
    async purgeIfDue(input: PurgeInput): Promise<PurgeOutcome> {
      const { key } = input;
      const stored = await deps.archive.find(key);
      if (!stored) return { key, status: 'kept', detail: 'no archive' };
      const { manifest } = stored;
      // The run of the walk: its tombstones name it, so that a retry knows its own purge from another walk's.
      const walk = Context.current().info.workflowExecution?.runId;
      if (manifest.purged) {
        // Purged before: what a crash after the tombstone left goes now. Purged by this run (an attempt whose answer
        // was lost, or that crashed after the tombstone), it counts as this walk's purge; another walk's is a tombstone.
        await deps.archive.purge(key, manifest, []);
        return { key, status: walk !== undefined && manifest.purged.walk === walk ? 'purged' : 'tombstone' };
      }
      if (!manifest.retention) return { key, status: 'kept', detail: 'no retention recorded' };
      // Not earlier than the workflow's clock (a test's simulated years), nor than this machine's (a late retry).
      const at = new Date(Math.max(Date.parse(input.asOf), Date.now())).toISOString();
      if (at < manifest.retention.until) return { key, status: 'kept', detail: `retained until ${manifest.retention.until}` };
      if (!deps.holds) throw new Error('the purge needs the legal holds register: the worker has no Temporal client for it');
      const holds = await deps.holds();
      const held = holdsOn(manifest, holds);
      if (held.length > 0) {
        // Past its retention only the hold keeps it: the bucket holds it too, whatever a failed or raced change missed.
        await deps.archive.applyLegalHold(key, true);
        return { key, status: 'held', detail: held.map((h) => h.id).join(', ') };
      }
      await deps.archive.purge(key, tombstoneOf(manifest, at, walk), holds);
      // Another walk may have purged it between the read and the purge (two walks at once): the store then keeps that
      // walk's tombstone, and the purge counts for the walk it names only.
      const after = await deps.archive.find(key);
      return { key, status: walk !== undefined && after?.manifest.purged?.walk !== walk ? 'tombstone' : 'purged' };
    },

    /**
     * After holds changed on `scopes` (the register, once a hold is placed or released): each archive they cover
     * gets the store's own legal hold where one of `holds` covers it, and loses it where none does. The whole
     * archive is walked (a referenceId or a batch is known only from the manifests), resuming after the last
     * archive a failed attempt reported done. Idempotent; nothing where the store holds no objects itself.
     */
    async applyLegalHolds(input: LegalHoldsChange): Promise<LegalHoldsApplied> {
      if (!deps.archive.holdsObjects) {
        return { archives: 0, held: 0, released: 0, skipped: 'the archive store does not hold objects itself: the register is its guard' };
      }
      const ctx = Context.current();
      const resumed = ctx.info.heartbeatDetails as (LegalHoldsApplied & { after: string }) | undefined;
      const progress = resumed ?? { archives: 0, held: 0, released: 0, after: '' };
      // A transaction's archive is `<prefix>/<transactionId>`: when only transactions changed, only keys ending so are read.
      const transactions = input.scopes.every((s) => s.scope === 'transaction') ? new Set(input.scopes.map((s) => s.target)) : undefined;
      return whileHeartbeating(
        async () => {
          const candidates: string[] = [];
          for await (const key of deps.archive.keys()) {
            if (key <= progress.after) continue;
            if (transactions && !transactions.has(key.slice(key.lastIndexOf('/') + 1))) continue;
            candidates.push(key);
          }
          for (let i = 0; i < candidates.length; i += PARALLEL) {
            const batch = candidates.slice(i, i + PARALLEL);
            const outcomes = await Promise.all(batch.map((key) => applyTo(key)));
            // Counted once the whole batch is done, as a retry resumes after it.
            for (const outcome of outcomes) {
              if (outcome === undefined) continue;
              progress.archives++;
              progress[outcome]++;
            }
            progress.after = batch.at(-1)!;
          }
          const { after: _after, ...applied } = progress;
          return applied;
        },
        () => progress,
      );

      async function applyTo(key: string): Promise<'held' | 'released' | undefined> {
        const stored = await deps.archive.find(key);
        // Gone, or a tombstone: nothing is left that a hold would keep.
        if (!stored || stored.manifest.purged || holdsOn(stored.manifest, input.scopes).length === 0) return undefined;
        const on = holdsOn(stored.manifest, input.holds).length > 0;
        await deps.archive.applyLegalHold(key, on);
        return on ? 'held' : 'released';
      }
    },
  };
}
