// Records retention and legal holds on the time-skipping server, across simulated years: the purge the Schedule starts
// (the test server has no Schedules, so the test starts it as the Schedule's action does) walks a real local archive;
// an archive whose retention ended is purged on its date, leaving a tombstone with nothing personal in it; one on hold
// outlives its date and is purged once the hold is released; one not yet due is kept, and the store itself refuses to
// purge it early. Holds go through the real register workflow, as `esign hold` sends them.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEvidenceUpkeepActivities } from '../../activities/evidence-upkeep.js';
import { createRecordsActivities } from '../../activities/records.js';
import { LocalArchiveStore, PurgeRefused, type ArchiveManifest } from '../../src/archive/store.js';
import { listLegalHolds, placeLegalHold, releaseLegalHold } from '../../src/client/records.js';
import type { RetentionTotals } from '../../src/definitions/records.js';
import { retentionOf, tombstoneOf } from '../../src/records/retention.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { createTimeSkippingEnv, uniqueTaskQueue } from '../support/temporal.js';

const DAY = 24 * 3600 * 1000;
let env: TestWorkflowEnvironment;
let work: string;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
  work = await mkdtemp(join(tmpdir(), 'esign-records-'));
});
afterAll(async () => {
  await env?.teardown();
});

/** An archive as the archive activity commits it, with the personal fields a tombstone must not keep. */
async function archive(store: LocalArchiveStore, key: string, referenceId: string, period: string, at: number): Promise<void> {
  const zip = join(work, `${key}.zip`);
  await writeFile(zip, 'PK\u0003\u0004 a signed lease');
  const archivedAt = new Date(at).toISOString();
  const manifest: ArchiveManifest = {
    referenceId,
    transactionId: key,
    esignId: randomUUID(),
    zip: { name: 'completed.zip', bytes: 24, sha256: 'a'.repeat(64) },
    documents: [{ title: 'Lease for Tia Tenant', StoragePath: 'uploads/lease.pdf', sha256: 'b'.repeat(64) }],
    files: [{ name: 'Lease for Tia Tenant.pdf', bytes: 10, sha256: 'c'.repeat(64) }],
    corrections: [{ kind: 'contact', by: 'ops:jane', at: archivedAt, added: { id: 'p2', name: 'Tia Tenant' } }],
    approvals: [{ approverId: 'cfo', name: 'Carla Finance', decision: 'approved', comment: 'ok for Tia', at: archivedAt }],
    downloadedAt: archivedAt,
    archivedAt,
    retention: retentionOf(archivedAt, period, 'transaction'),
  };
  await store.commit(key, zip, manifest);
}

it('purges on its date with a tombstone, keeps what a hold covers until it is released, and never purges early', async () => {
  const store = new LocalArchiveStore(join(work, 'archive'));
  const taskQueue = uniqueTaskQueue('records');
  // Not env.client: its result() lets the server skip time while the activities run.
  const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath,
    activities: {
      ...createEvidenceUpkeepActivities({ archive: store }),
      ...createRecordsActivities({ archive: store, holds: () => listLegalHolds(client) }),
    },
  });
  const purge = (): Promise<RetentionTotals> =>
    client.workflow.execute('recordsRetention', { taskQueue, workflowId: `records-${randomUUID()}`, args: [{}] });
  const skipTo = async (at: number) => env.sleep(at - (await env.currentTimeMs()));
  const manifest = async (key: string) => (await store.find(key))!.manifest;

  await worker.runUntil(async () => {
    const start = await env.currentTimeMs();
    await archive(store, 'tx-a-one-year', 'lease-a', '1 year', start);
    await archive(store, 'tx-b-held', 'lease-b', '1 year', start);
    await archive(store, 'tx-c-five-years', 'lease-c', '5 years', start);
    const hold = await placeLegalHold(
      client,
      { scope: 'reference', target: 'lease-b', reason: 'litigation 2026-114', by: 'legal:sam' },
      { taskQueue },
    );
    expect(hold).toMatchObject({ scope: 'reference', target: 'lease-b', by: 'legal:sam' });
    expect(hold.id).toMatch(/^hold-/);

    // Nothing is due on the first day.
    expect(await purge()).toEqual({ checked: 3, purged: 0, held: 0, purgedKeys: [], heldKeys: [] });
    // The store refuses to purge early, whoever asks.
    const early = tombstoneOf(await manifest('tx-c-five-years'), new Date(start + DAY).toISOString());
    await expect(store.purge('tx-c-five-years', early, [])).rejects.toBeInstanceOf(PurgeRefused);

    // A year (366 days) and a day on: the first is purged; the held one outlives its date.
    await skipTo(start + 367 * DAY);
    expect(await purge()).toEqual({ checked: 3, purged: 1, held: 1, purgedKeys: ['tx-a-one-year'], heldKeys: ['tx-b-held'] });
    const tombstone = await manifest('tx-a-one-year');
    expect(tombstone.purged).toMatchObject({ retention: { period: '1 year', source: 'transaction' } });
    expect(tombstone.purged!.destroyed.map((d) => d.sha256)).toEqual(['a'.repeat(64), 'c'.repeat(64)]);
    expect(JSON.stringify(tombstone)).not.toMatch(/Tia|Carla|Lease for/);
    expect(await readdir(join(work, 'archive', 'tx-a-one-year'))).toEqual(['manifest.json']);
    expect((await manifest('tx-b-held')).purged).toBeUndefined();
    expect(await store.read('tx-b-held', 'completed.zip')).toBeInstanceOf(Buffer);

    // Released, it goes at the next run; the five-year one stays.
    const released = await releaseLegalHold(client, { holdId: hold.id, reason: 'case settled', by: 'legal:sam' });
    expect(released.released).toMatchObject({ by: 'legal:sam', reason: 'case settled' });
    expect(await purge()).toMatchObject({ purged: 1, purgedKeys: ['tx-b-held'], held: 0 });
    expect((await manifest('tx-c-five-years')).purged).toBeUndefined();
    // The register keeps the hold and its release: its history is the audit.
    const register = await listLegalHolds(client);
    expect(register.map((h) => [h.id, h.released?.by])).toEqual([[hold.id, 'legal:sam']]);
    // A release twice, or of a hold that does not exist, is refused with the reason.
    const twice = await releaseLegalHold(client, { holdId: hold.id, reason: 'again', by: 'legal:sam' }).catch((err: Error) => err);
    expect((twice as Error).cause).toMatchObject({ message: `hold ${hold.id} was released at ${released.released!.at}` });
    await expect(
      placeLegalHold(client, { scope: 'matter' as never, target: 'b-1', reason: 'x', by: 'legal:sam' }, { taskQueue }),
    ).rejects.toMatchObject({ cause: { message: 'scope must be one of transaction, reference, batch' } });
  });
}, 120_000);

it("counts a purge whose answer was lost as the walk's own, and another walk's tombstone as a tombstone", async () => {
  const store = new LocalArchiveStore(join(work, 'archive-retried'));
  const activities = createRecordsActivities({ archive: store, holds: async () => [] });
  const purgeIfDue = (input: { key: string; asOf: string }) => activities.purgeIfDue(input);
  const start = Date.parse('2030-01-01T00:00:00.000Z');
  await archive(store, 'tx-d', 'lease-d', '1 day', start);
  const asOf = new Date(start + 2 * DAY).toISOString();
  const walk = (runId: string, attempt = 1) =>
    new MockActivityEnvironment({ attempt, workflowExecution: { workflowId: 'esign-records-retention', runId } }).run(purgeIfDue, {
      key: 'tx-d',
      asOf,
    });
  expect(await walk('walk-1')).toEqual({ key: 'tx-d', status: 'purged' });
  expect((await store.find('tx-d'))!.manifest.purged).toMatchObject({ walk: 'walk-1' });
  // The answer was lost: the retry finds the tombstone this walk left, and the walk still counts its purge.
  expect(await walk('walk-1', 2)).toEqual({ key: 'tx-d', status: 'purged' });
  // Another walk (even one that read the same clock, running beside it) finds a tombstone.
  expect(await walk('walk-2')).toEqual({ key: 'tx-d', status: 'tombstone' });
});
