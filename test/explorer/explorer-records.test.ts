// What the explorer holds the records retention and the legal holds register to (explore/records.ts): each reading
// fails on the record a broken worker or workflow would leave, and passes on the one a correct one leaves. The
// activities are the real ones (activities/records.ts), run over the explorer's model of the store.
import { MockActivityEnvironment } from '@temporalio/testing';
import { expect, it } from 'vitest';
import { checkRecords } from '../../explore/records-checks.js';
import { RecordsModel, type HoldMove } from '../../explore/records.js';
import type { Observation } from '../../explore/observation.js';
import type { LegalHold, PurgeOutcome } from '../../src/definitions/records.js';

const HOUR = 3_600_000;
const NOW = Date.parse('2027-01-01T00:00:00.000Z');
const WALK = 'esign-retention-x1-1-1';

const hold = (target: string, id = 'hold-1', released?: LegalHold['released']): LegalHold => ({
  id,
  scope: 'reference',
  target,
  reason: 'held by the explorer',
  by: 'explorer:operator',
  placedAt: new Date(NOW - HOUR).toISOString(),
  ...(released ? { released } : {}),
});

/** A model with one archive of referenceId `x1-1`, past its retention; `holds` is what the purge reads. */
function model(holds: () => LegalHold[], holdsObjects = true): RecordsModel {
  const records = new RecordsModel({ retentionMs: HOUR, holdsObjects }, async () => holds());
  records.committed({ key: 'tx-1', transactionId: 'tx-1', referenceId: 'x1-1', sha256: 'a'.repeat(64) }, NOW - 2 * HOUR);
  return records;
}

/** The hold placed (sent, then answered) at this point of the model's order. */
function placed(records: RecordsModel, h: LegalHold): HoldMove {
  const move: HoldMove = { step: 'hold@+0s', scope: h.scope, target: h.target, sentSeq: records.tick() };
  move.placed = { outcome: 'ok', hold: h, seq: records.tick() };
  records.moves.push(move);
  return move;
}

const activity = (activityType: 'purgeIfDue' | 'applyLegalHolds', activityId = '1') =>
  new MockActivityEnvironment({
    activityType,
    activityId,
    workflowExecution: { workflowId: WALK, runId: 'run-1' },
    currentAttemptScheduledTimestampMs: NOW,
  });

const purge = (records: RecordsModel, activityId = '1'): Promise<PurgeOutcome> =>
  activity('purgeIfDue', activityId).run(records.activities().purgeIfDue, { key: 'tx-1', asOf: new Date(NOW).toISOString() });

function findings(records: RecordsModel): string[] {
  const out: string[] = [];
  checkRecords({ records } as unknown as Observation, (_check, detail) => out.push(detail));
  return out;
}

/** The schedule's end as the driver records it: the register's holds, the archives, a last walk that did nothing. */
function atRest(records: RecordsModel, holds: LegalHold[], settled = true): void {
  const archives = records.archives();
  records.atRest = {
    holds,
    settled,
    beforeLastWalk: archives,
    afterLastWalk: archives.map(({ key, purged, objectHold }) => ({ key, purged, objectHold })),
  };
}

it('finds a purge that read no holds while one the register had answered stood', async () => {
  const h = hold('x1-1');
  // A worker that reads the register wrong (here: nothing) purges what the hold keeps.
  const records = model(() => []);
  placed(records, h);
  expect((await purge(records)).status).toBe('purged');
  expect(findings(records).join('\n')).toContain(
    'tx-1 was purged by esign-retention-x1-1-1 while hold-1 (hold@+0s), answered before, stood',
  );
});

it('lets a purge through when the hold came after it, or its release was asked before it ended', async () => {
  const after = model(() => []);
  expect((await purge(after)).status).toBe('purged');
  placed(after, hold('x1-1'));
  expect(findings(after).filter((f) => f.includes('answered before'))).toEqual([]);

  const released = model(() => []);
  const move = placed(released, hold('x1-1'));
  move.release = { askedSeq: released.tick(), outcome: 'ok' };
  expect((await purge(released)).status).toBe('purged');
  expect(findings(released).filter((f) => f.includes('answered before'))).toEqual([]);
});

it('judges a purge where it destroyed: a retry that finds its tombstone after a hold came is no purge under it', async () => {
  const records = model(() => []);
  expect((await purge(records, '1')).status).toBe('purged');
  placed(records, hold('x1-1'));
  // The first answer was lost; the retry comes after the hold was answered and finds the walk's own tombstone.
  expect((await purge(records, '1')).status).toBe('purged');
  expect(records.purges.map((c) => c.destroyed)).toEqual([true, false]);
  expect(findings(records).filter((f) => f.includes('answered before'))).toEqual([]);
});

it('keeps an archive a standing hold covers, and holds it in the store too', async () => {
  const h = hold('x1-1');
  const records = model(() => [h]);
  placed(records, h);
  expect((await purge(records)).status).toBe('held');
  const [archive] = records.archives();
  expect(archive).toMatchObject({ purged: false, objectHold: true });
});

it("finds an archive that was there when the hold was asked and that the register's walk never held", async () => {
  const h = hold('x1-1');
  const records = model(() => [h]);
  placed(records, h);
  // The purge holds it (past its retention), which would hide a register that forgot it.
  await purge(records);
  atRest(records, [h]);
  expect(findings(records)).toContain("tx-1, archived before hold-1 was asked, was never held by the register's walk");

  await activity('applyLegalHolds').run(records.activities().applyLegalHolds, {
    holds: [{ scope: h.scope, target: h.target }],
    scopes: [{ scope: h.scope, target: h.target }],
  });
  atRest(records, [h]);
  expect(findings(records)).toEqual([]);
});

it("finds a hold the register's walk left after its release, and judges nothing at rest while a change is on its way", async () => {
  const h = hold('x1-1');
  const records = model(() => [h]);
  const move = placed(records, h);
  const apply = (holds: LegalHold[]) =>
    activity('applyLegalHolds').run(records.activities().applyLegalHolds, {
      holds: holds.map((x) => ({ scope: x.scope, target: x.target })),
      scopes: [{ scope: h.scope, target: h.target }],
    });
  await apply([h]);
  const released = { ...h, released: { at: new Date(NOW).toISOString(), by: 'explorer:operator', reason: 'released by the explorer' } };
  move.release = { askedSeq: records.tick(), outcome: 'ok' };
  // A register that did not follow the release leaves the archive held in the store.
  atRest(records, [released]);
  expect(findings(records)).toContain("the register's walk left tx-1 held, which no standing hold covers");
  // Read while the release was still on its way: not at rest, not judged.
  atRest(records, [released], false);
  expect(findings(records).filter((f) => f.includes('register'))).toEqual([]);
  // Followed, nothing is left held.
  await apply([]);
  atRest(records, [released]);
  expect(findings(records).filter((f) => f.includes('held'))).toEqual([]);
});

it('finds a last walk that left, past every retention, an archive no hold covers', () => {
  const records = model(() => []);
  atRest(records, []);
  expect(findings(records)).toContain('the last walk, past every retention, left tx-1, which no hold covers');
});

it("holds the register's answers to what it holds at rest", () => {
  const h = hold('x1-1');
  const records = model(() => []);
  placed(records, h);
  // Lost: the register does not hold an answered hold.
  atRest(records, []);
  expect(findings(records)).toContain('hold-1 (hold@+0s) was answered, but the register does not hold it');
  // Made up: it holds one nobody placed.
  atRest(records, [h, hold('x9-9', 'hold-2')]);
  expect(findings(records)).toContain('the register holds hold-2, which nobody placed');
  // Released without being asked.
  atRest(records, [hold('x1-1', 'hold-1', { at: new Date(NOW).toISOString(), by: 'someone', reason: 'gone' })]);
  expect(findings(records)).toContain('hold-1 is released, but nobody asked');
});

it("holds a walk's totals to its purges, a retried one's included", async () => {
  const records = model(() => []);
  expect((await purge(records, '1')).status).toBe('purged');
  // The same activity again: the first answer was lost, and the retry finds the tombstone this walk left.
  expect((await purge(records, '1')).status).toBe('purged');
  const walk = (purged: string[]) => ({ checked: 1, purged: purged.length, held: 0, purgedKeys: purged, heldKeys: [] });
  records.walks.push({ workflowId: WALK, final: false, end: { kind: 'result', result: walk(['tx-1']) } });
  expect(findings(records).filter((f) => f.includes('counted'))).toEqual([]);
  // A walk that does not count a purge it made is found.
  records.walks[0]!.end = { kind: 'result', result: walk([]) };
  expect(findings(records).join('\n')).toContain(`the retention walk ${WALK} counted 0 purged (); it purged tx-1`);
});
