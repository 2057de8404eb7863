// The holds register drives S3's own legal hold (Object Lock), on the time-skipping server with a real s3rver behind
// the proxy that answers what a bucket with Object Lock has (test/support/s3.ts): a hold placed sets the object legal
// hold on each archive it covers, a release clears it where no other hold covers the archive, a hold placed while S3
// fails is answered at once and applied once S3 is back, and an archive made after a hold is held as it is written.
// The register's history of these, with its patch, replays. Then the activity's walk on its own: resumed after what
// an attempt reported done, and skipped where the store holds nothing itself.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createArchiveActivities, type ArchiveInput } from '../../activities/archive.js';
import { createRecordsActivities } from '../../activities/records.js';
import { S3ArchiveStore } from '../../src/archive/s3-store.js';
import { LocalArchiveStore, type ArchiveManifest } from '../../src/archive/store.js';
import { listLegalHolds, placeLegalHold, releaseLegalHold } from '../../src/client/records.js';
import { LEGAL_HOLDS_WORKFLOW_ID, type HoldRequest, type LegalHoldsChange } from '../../src/definitions/records.js';
import type { EsignClient } from '../../src/esign/client.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { writeZip } from '../support/zip.js';

const BUCKET = 'signed-documents';
/** Activities run here, their logs kept out of the test's output. */
const activityEnv = (info?: ConstructorParameters<typeof MockActivityEnvironment>[0]) =>
  new MockActivityEnvironment(info, { logger: new DefaultLogger('WARN') });
let env: TestWorkflowEnvironment;
let s3: TestS3;
let work: string;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
  s3 = await startS3(BUCKET, { objectLock: true });
  work = await mkdtemp(join(tmpdir(), 'esign-holds-s3-'));
});
afterAll(async () => {
  await env?.teardown();
  await s3?.close();
});

const storeAt = (prefix: string) =>
  new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix, objectLock: { mode: 'COMPLIANCE', days: 3650 } });

/** Commits an archive as the archive activity does, of a transaction of `referenceId` (and of a bulk send). */
async function archive(store: S3ArchiveStore, key: string, referenceId: string, batchId?: string): Promise<void> {
  const zip = join(work, `${key.replace(/\//g, '_')}.zip`);
  await writeFile(zip, randomBytes(256));
  const manifest: ArchiveManifest = {
    referenceId,
    // Archived under `<archivePrefix>/<transactionId>`.
    transactionId: key.split('/').at(-1)!,
    esignId: `es-${key}`,
    ...(batchId ? { batchId } : {}),
    zip: { name: 'completed.zip', bytes: 256, sha256: 'a'.repeat(64) },
    documents: [],
    files: [],
    downloadedAt: '2026-01-01T00:00:00.000Z',
    archivedAt: '2026-01-01T00:00:01.000Z',
  };
  await store.commit(key, zip, manifest);
}

/** S3's legal hold on an archive's ZIP and manifest, as the bucket keeps it. */
const heldOf = (prefix: string, key: string) => [
  s3.legalHolds.get(`${prefix}/${key}/completed.zip`),
  s3.legalHolds.get(`${prefix}/${key}/manifest.json`),
];
const HELD = ['ON', 'ON'];
const RELEASED = ['OFF', 'OFF'];

it('sets S3’s legal hold on what a hold covers, clears it when no hold covers it any more, and never makes an answer wait', async () => {
  const store = storeAt('esign');
  const taskQueue = 'holds-s3';
  const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
  const records = createRecordsActivities({ archive: store, holds: () => listLegalHolds(client) });
  // S3 down: the activity fails, and Temporal retries it.
  const s3Down = { on: false, failed: 0 };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath,
    activities: {
      ...records,
      applyLegalHolds: async (input: LegalHoldsChange) => {
        if (s3Down.on) {
          s3Down.failed++;
          throw new Error('S3 is unavailable');
        }
        return records.applyLegalHolds(input);
      },
    },
  });
  const register = client.workflow.getHandle(LEGAL_HOLDS_WORKFLOW_ID);
  const applied = async () => (await register.fetchHistory()).events!.filter((e) => e.activityTaskCompletedEventAttributes != null).length;
  const hold = (request: Omit<HoldRequest, 'reason' | 'by'>) =>
    placeLegalHold(client, { ...request, reason: 'matter 114', by: 'legal:sam' }, { taskQueue });
  const poll = { timeout: 20_000, interval: 100 };

  await worker.runUntil(async () => {
    await archive(store, 'tx-1', 'lease-a');
    await archive(store, 'tx-2', 'lease-a', 'bulk-1');
    await archive(store, 'tx-3', 'lease-b');

    // A hold on a referenceId: both of its archives, and nothing else.
    const byReference = await hold({ scope: 'reference', target: 'lease-a' });
    await expect.poll(() => applied(), poll).toBe(1);
    expect([heldOf('esign', 'tx-1'), heldOf('esign', 'tx-2'), heldOf('esign', 'tx-3')]).toEqual([HELD, HELD, [undefined, undefined]]);

    // A second hold covers tx-2 too: released, the first leaves tx-2 held.
    await hold({ scope: 'batch', target: 'bulk-1' });
    await expect.poll(() => applied(), poll).toBe(2);
    await releaseLegalHold(client, { holdId: byReference.id, reason: 'settled', by: 'legal:sam' });
    await expect.poll(() => applied(), poll).toBe(3);
    expect([heldOf('esign', 'tx-1'), heldOf('esign', 'tx-2')]).toEqual([RELEASED, HELD]);

    // S3 fails: the hold is answered and stands in the register at once, and reaches S3 once it is back.
    s3Down.on = true;
    const byTransaction = await hold({ scope: 'transaction', target: 'tx-3' });
    expect((await listLegalHolds(client)).map((h) => h.id)).toContain(byTransaction.id);
    await expect.poll(() => s3Down.failed, poll).toBeGreaterThanOrEqual(2);
    expect(heldOf('esign', 'tx-3')).toEqual([undefined, undefined]);
    s3Down.on = false;
    await expect.poll(() => heldOf('esign', 'tx-3'), poll).toEqual(HELD);
    await expect.poll(() => applied(), poll).toBe(4);

    // An archive made after a hold covers it is held as it is committed; one no hold covers is not asked about.
    const zip = await writeZip(join(work, 'completed.zip'), [{ name: 'Contract.pdf', data: Buffer.from('%PDF-1.7 signed') }]);
    const bytes = await readFile(zip);
    const provider = {
      downloadCompletedDocuments: async () => ({
        body: Readable.from([bytes]),
        contentLength: bytes.length,
        contentType: 'application/zip',
      }),
    } as unknown as EsignClient;
    const archiving = createArchiveActivities({ client: provider, archive: store, holds: () => listLegalHolds(client) });
    const archiveCompletedDocuments = (i: ArchiveInput) => archiving.archiveCompletedDocuments(i);
    const input = (transactionId: string, referenceId: string, batchId?: string) => ({
      referenceId,
      transactionId,
      esignId: `es-${transactionId}`,
      documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf' }],
      ...(batchId ? { batchId } : {}),
    });
    await activityEnv().run(archiveCompletedDocuments, input('tx-4', 'lease-c', 'bulk-1'));
    expect(heldOf('esign', 'tx-4')).toEqual(HELD);
    const before = s3.requests.length;
    await activityEnv().run(archiveCompletedDocuments, input('tx-5', 'lease-d'));
    expect(s3.requests.slice(before).filter((r) => /[?&]legal-hold/.test(r.url))).toEqual([]);

    // The register's history, with its patch and its four walks, replays on today's code.
    const history = await register.fetchHistory();
    const markers = history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    expect(markers).toHaveLength(1);
    await Worker.runReplayHistory({ workflowsPath }, history, LEGAL_HOLDS_WORKFLOW_ID);
  });
}, 120_000);

it('walks only the archives the change covers, resumes after what an attempt reported done, and skips a store that holds nothing', async () => {
  const store = storeAt('walk');
  await archive(store, 'acme/tx-1', 'lease-a');
  await archive(store, 'acme/tx-2', 'lease-a');
  await archive(store, 'acme/tx-3', 'lease-b');
  const records = createRecordsActivities({ archive: store });
  const applyLegalHolds = (change: LegalHoldsChange) => records.applyLegalHolds(change);
  const lease = { scope: 'reference', target: 'lease-a' } as const;

  // A retry after an attempt that reported acme/tx-1 done goes on from acme/tx-2.
  const resumed = activityEnv({ heartbeatDetails: { archives: 1, held: 1, released: 0, after: 'acme/tx-1' } });
  expect(await resumed.run(applyLegalHolds, { holds: [lease], scopes: [lease] })).toEqual({ archives: 2, held: 2, released: 0 });
  expect([heldOf('walk', 'acme/tx-1'), heldOf('walk', 'acme/tx-2')]).toEqual([[undefined, undefined], HELD]);

  // A transaction's change reads only the manifest of its archive.
  const before = s3.requests.length;
  const tx = { scope: 'transaction', target: 'tx-3' } as const;
  expect(await activityEnv().run(applyLegalHolds, { holds: [lease], scopes: [tx] })).toEqual({ archives: 1, held: 0, released: 1 });
  const manifestsRead = s3.requests.slice(before).filter((r) => r.method === 'GET' && r.url.includes('/manifest.json'));
  expect(manifestsRead.map((r) => decodeURIComponent(new URL(r.url, 'http://s3').pathname))).toEqual([
    `/${BUCKET}/walk/acme/tx-3/manifest.json`,
  ]);
  expect(heldOf('walk', 'acme/tx-3')).toEqual(RELEASED);

  const local = createRecordsActivities({ archive: new LocalArchiveStore(join(work, 'local')) });
  const skipped = await activityEnv().run((change: LegalHoldsChange) => local.applyLegalHolds(change), { holds: [lease], scopes: [lease] });
  expect(skipped).toEqual({
    archives: 0,
    held: 0,
    released: 0,
    skipped: 'the archive store does not hold objects itself: the register is its guard',
  });
});
