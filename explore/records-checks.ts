/**
 * What must hold after a schedule's legal holds and retention walks (explore/records.ts says what they do):
 *
 * - nothing is destroyed while a hold covering it stands whose placing was answered before the purge began and whose
 *   release was not asked before the purge ended, nor before its retention ends by the server's clock (judged on the
 *   attempt that destroyed it);
 * - every walk ends, and counts as purged exactly the archives its attempts destroyed;
 * - at rest, judged only when every hold and release was answered before the register was read:
 *   - the register's answers are true: every hold answered is in the register as answered, released when its
 *     release was answered, and the register holds nothing nobody placed;
 *   - every archive a standing hold covers is held by the store too, where it holds objects, and by the register's
 *     own walk when it was there before the hold was asked; the register's walk leaves held nothing no hold covers;
 *   - a last walk past every retention purges every archive no hold covers, and none that one covers.
 */
import type { LegalHold } from '../src/definitions/records.js';
import { holdsOn } from '../src/records/retention.js';
import type { Observation } from './observation.js';
import type { RecordsModel } from './records.js';

type Found = (check: 'records', detail: string) => void;

export function checkRecords(observation: Observation, found: Found): void {
  const records = observation.records;
  if (!records) return;
  checkPurges(records, found);
  checkWalks(records, found);
  const rest = records.atRest;
  if (!rest) return found('records', 'the schedule ended before its records came to rest');
  if (rest.holdsError) return found('records', `the register could not be read at rest: ${rest.holdsError}`);
  // A hold or release still on its way when the holds were read: the register and the store may be read between a
  // change and its application, so what must hold at rest is not judged (the purges and the walks are).
  if (!rest.settled) return;
  checkRegister(records, rest.holds, found);
  const standing = rest.holds.filter((h) => !h.released);
  // A hold may come after a purge: what was purged before stays a tombstone (checkPurges judges each purge).
  for (const a of rest.beforeLastWalk) {
    if (a.purged || !records.setup.holdsObjects) continue;
    const held = holdsOn(a.manifest, standing);
    // The register's walk follows every change with the holds then in force: at rest, it holds nothing no hold covers.
    if (held.length === 0 && a.registerHold) found('records', `the register's walk left ${a.key} held, which no standing hold covers`);
    if (held.length === 0) continue;
    if (!a.objectHold)
      found('records', `${a.key} is covered by ${held.map((h) => h.id).join(', ')}, but the store does not hold it (the register at rest)`);
    // The register's own walk must have held what was there when the hold was asked (the purge and the archive hold
    // it too, which would hide a register that forgot).
    const askedAfter = held.filter((h) =>
      records.moves.some((m) => m.placed?.outcome === 'ok' && m.placed.hold.id === h.id && m.sentSeq > a.seq),
    );
    if (askedAfter.length > 0 && !a.registerHold)
      found(
        'records',
        `${a.key}, archived before ${askedAfter.map((h) => h.id).join(', ')} was asked, was never held by the register's walk`,
      );
  }
  for (const a of rest.afterLastWalk) {
    const before = rest.beforeLastWalk.find((b) => b.key === a.key);
    if (!before || before.purged) continue;
    const held = holdsOn(before.manifest, standing).length > 0;
    if (held && a.purged) found('records', `the last walk purged ${a.key}, which a standing hold covers`);
    if (!held && !a.purged) found('records', `the last walk, past every retention, left ${a.key}, which no hold covers`);
  }
}

/** Nothing purged under a hold the register had answered, nor before its retention ended. */
function checkPurges(records: RecordsModel, found: Found): void {
  // Judged where the archive was destroyed: a retry that finds its tombstone later destroys nothing.
  for (const call of records.purges) {
    if (!call.destroyed) continue;
    const archive = records.archives().find((a) => a.key === call.key);
    const until = archive?.manifest.purged?.retention.until ?? archive?.manifest.retention?.until;
    if (until && call.scheduledAt < Date.parse(until))
      found('records', `${call.key} was purged at ${new Date(call.scheduledAt).toISOString()}, before its retention ended (${until})`);
    for (const move of records.moves) {
      if (move.placed?.outcome !== 'ok' || move.placed.seq >= call.from) continue;
      // A release asked before the purge ended may or may not have been read: either is right.
      if (move.release && move.release.outcome !== 'error' && move.release.askedSeq < call.to) continue;
      if (archive && holdsOn(archive.manifest, [{ ...move.placed.hold, released: undefined }]).length > 0)
        found(
          'records',
          `${call.key} was purged by ${call.workflowId} while ${move.placed.hold.id} (${move.step}), answered before, stood`,
        );
    }
  }
}

/** Every walk ended, and its totals are its purges. */
function checkWalks(records: RecordsModel, found: Found): void {
  for (const walk of records.walks) {
    if (walk.end.kind !== 'result') {
      found(
        'records',
        `the retention walk ${walk.workflowId} did not end: ${walk.end.kind === 'failed' ? walk.end.message : walk.end.where}`,
      );
      continue;
    }
    // Every archive it destroyed, in any attempt (one whose answer was lost counts: its retry finds the walk's tombstone).
    const purged = new Set(records.purges.filter((c) => c.workflowId === walk.workflowId && c.destroyed).map((c) => c.key));
    const { result } = walk.end;
    if (result.purged !== purged.size || result.purgedKeys.some((k) => !purged.has(k)))
      found(
        'records',
        `the retention walk ${walk.workflowId} counted ${result.purged} purged (${result.purgedKeys.join(', ')}); it purged ${[...purged].join(', ') || 'none'}`,
      );
  }
}

/** The register's answers, against what it holds at rest. */
function checkRegister(records: RecordsModel, holds: readonly LegalHold[], found: Found): void {
  const answered = records.moves.flatMap((m) => (m.placed?.outcome === 'ok' ? [{ move: m, hold: m.placed.hold }] : []));
  for (const { move, hold } of answered) {
    const kept = holds.find((h) => h.id === hold.id);
    if (!kept) {
      found('records', `${hold.id} (${move.step}) was answered, but the register does not hold it`);
      continue;
    }
    if (kept.scope !== move.scope || kept.target !== move.target)
      found('records', `${hold.id} was asked on ${move.scope} ${move.target}; the register holds it on ${kept.scope} ${kept.target}`);
    if (move.release?.outcome === 'ok' && !kept.released) found('records', `${hold.id}'s release was answered, but it stands`);
    if (kept.released && !move.release) found('records', `${hold.id} is released, but nobody asked`);
  }
  for (const h of holds) {
    const asked = records.moves.some((m) => m.scope === h.scope && m.target === h.target && m.placed?.outcome !== 'ok');
    if (!answered.some((a) => a.hold.id === h.id) && !asked) found('records', `the register holds ${h.id}, which nobody placed`);
  }
}
