// The evidence upkeep on the time-skipping server, across simulated years: the workflow the Schedule starts
// (src/client/evidence-upkeep.ts; the test server has no Schedules, so the test starts it as the Schedule's
// action does) walks a real local archive, renews what is due with an RFC 3161 authority and revocation data
// over HTTP (both on the server's simulated clock), and the renewed copies still verify after the sandbox TSA's
// certificate ended, where the untouched originals no longer do. The Schedule itself runs on the dev server
// (test/evidence/evidence-upkeep-schedule.test.ts).
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpTimestampAuthority } from '@libpdf/core';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEvidenceUpkeepActivities } from '../../activities/evidence-upkeep.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { holdWhole, verifyZip } from '../../src/archive/zip-verify.js';
import type { EvidenceUpkeepResult } from '../../src/definitions/evidence-upkeep.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { parseCertificates } from '../../src/evidence/pki.js';
import type { RenewalPolicy } from '../../src/evidence/renewal.js';
import { HttpRevocationProvider } from '../../src/evidence/revocation-client.js';
import { answerTimestampRequest } from '../../packages/sandbox/src/evidence/tsa-protocol.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { sha256 } from '../support/evidence.js';
import { archiveSealedBy, timestampingCa, YEAR } from '../support/renewal.js';
import { createTimeSkippingEnv, uniqueTaskQueue } from '../support/temporal.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

const DAY = 24 * 3600 * 1000;
let env: TestWorkflowEnvironment;
let authority: Server;
let work: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  work = await mkdtemp(join(tmpdir(), 'esign-upkeep-'));
});
afterAll(async () => {
  await new Promise((resolve) => authority?.close(resolve));
  await env?.teardown();
});

it('renews each archive before its time-stamp’s certificate ends, reports what lapsed, and the renewed evidence verifies years later', async () => {
  const simulatedNow = async () => new Date(await env.currentTimeMs());
  // The sandbox as archives know it (TSA certificate for three years); one whose TSA ends in 50 days; one whose TSA
  // ended 10 days after its seal (added to the archive once that is past).
  const sandbox = await SandboxSeal.open(join(work, 'pki-sandbox'));
  const soon = await SandboxSeal.open(join(work, 'pki-soon'), { now: new Date(Date.now() - 3 * YEAR + 50 * DAY), renewBefore: 0 });
  const brief = await SandboxSeal.open(join(work, 'pki-brief'), { now: new Date(Date.now() - 3 * YEAR + 10 * DAY), renewBefore: 0 });
  // The authority renewals use: a CA for twenty years, its TSA for sixteen; over HTTP, on the simulated clock.
  const renewal = await timestampingCa('upkeep', new Date(), 20, 16);
  authority = createServer((req, res) => {
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () => {
      void (async () => {
        const at = await simulatedNow();
        if (req.url === '/tsa') {
          res
            .writeHead(200, { 'content-type': 'application/timestamp-reply' })
            .end(await answerTimestampRequest(renewal.tsa, Buffer.concat(body), at));
        } else if (req.url === '/crl') {
          res.writeHead(200, { 'content-type': 'application/pkix-crl' }).end(await renewal.revocation.crl(at));
        } else res.writeHead(404).end();
      })().catch(() => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => authority.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(authority.address() as AddressInfo).port}`;

  const store = new LocalArchiveStore(join(work, 'archive'));
  await archiveSealedBy(store, work, sandbox, 'a-three-years');
  await archiveSealedBy(store, work, soon, 'c-fifty-days');
  // An archive kept under the policy `off`: nothing verified, nothing to keep.
  const unsealed = join(work, 'plain.zip');
  await writeFile(unsealed, Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000'), 'latin1'));
  await store.commit('b-unverified', unsealed, {
    referenceId: 'b',
    transactionId: 'b',
    esignId: 'es-b',
    zip: { name: 'completed.zip', bytes: 22, sha256: '0'.repeat(64) },
    documents: [],
    files: [],
    downloadedAt: new Date().toISOString(),
    archivedAt: new Date().toISOString(),
  });

  const anchors = [sandbox, soon, brief]
    .flatMap((s) => parseCertificates(s.caCertificate))
    .concat(parseCertificates(renewal.ca.certificate));
  const policy: RenewalPolicy = { trust: trustAnchorsOnly(anchors), horizonMs: 180 * DAY };
  const taskQueue = uniqueTaskQueue('upkeep');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath,
    activities: createEvidenceUpkeepActivities({
      archive: store,
      upkeep: {
        sources: {
          timestampAuthority: new HttpTimestampAuthority(`${base}/tsa`),
          revocationProvider: new HttpRevocationProvider({ crlUrl: `${base}/crl` }),
        },
        policy,
      },
    }),
  });
  // Not env.client: its result() lets the server skip time while the activities run (their timeouts, then years).
  const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
  const upkeep = (): Promise<EvidenceUpkeepResult> =>
    client.workflow.execute('evidenceUpkeep', { taskQueue, workflowId: `upkeep-${randomUUID()}`, args: [{}] });
  const skipTo = async (at: number) => env.sleep(at - (await env.currentTimeMs()));
  const manifest = async (key: string) => (await store.find(key))!.manifest;
  const sandboxEnds = Date.parse(sandbox.timestampAuthority.notAfter);

  await worker.runUntil(async () => {
    // Day 0: the archive whose TSA ends in 50 days is within the horizon; the others are not, or hold nothing.
    expect(await upkeep()).toEqual({ checked: 3, renewed: 1, lapsed: 0, skipped: 1, lapsedKeys: [], refused: 0, refusedKeys: [] });
    const c = await manifest('c-fifty-days');
    expect(c.renewals).toHaveLength(1);
    expect(c.renewals![0]!.documents.map((d) => d.entry).sort()).toEqual(['Contract.pdf', 'certificate-of-completion.pdf']);
    const renewedC = await store.read('c-fifty-days', c.renewals![0]!.documents[0]!.file);
    expect(sha256(renewedC)).toBe(c.renewals![0]!.documents[0]!.sha256);

    // Day 30: an archive whose TSA certificate ended on day 10 is added. It is too late to renew: reported, not renewed.
    await skipTo(Date.now() + 30 * DAY);
    await archiveSealedBy(store, work, brief, 'd-lapsed');
    expect(await upkeep()).toEqual({
      checked: 4,
      renewed: 0,
      lapsed: 1,
      skipped: 1,
      lapsedKeys: ['d-lapsed'],
      refused: 0,
      refusedKeys: [],
    });
    expect((await manifest('d-lapsed')).renewals).toBeUndefined();

    // 100 days before the sandbox TSA's certificate ends: the three-year archive is renewed, once.
    await skipTo(sandboxEnds - 100 * DAY);
    expect(await upkeep()).toMatchObject({ checked: 4, renewed: 1, lapsed: 1 });
    expect(await upkeep()).toMatchObject({ checked: 4, renewed: 0, lapsed: 1 });
    const a = await manifest('a-three-years');
    expect(a.renewals).toHaveLength(1);
    expect(Date.parse(a.renewals![0]!.asOf)).toBeGreaterThanOrEqual(sandboxEnds - 100 * DAY);
    expect(Date.parse(a.renewals![0]!.documents[0]!.evidenceExpiresAt)).toBeGreaterThan(sandboxEnds + 10 * YEAR);

    // A year after that certificate ended: the renewed copies verify, the originals in the ZIP do not.
    await skipTo(sandboxEnds + YEAR);
    const later = await simulatedNow();
    expect(await upkeep()).toMatchObject({ checked: 4, renewed: 0, lapsed: 1 });
    // A renewed copy changed on disk: that archive is refused, with its key, and the walk still covers the others.
    const tampered = (await manifest('c-fifty-days')).renewals![0]!.documents[0]!;
    const onDisk = join(work, 'archive', 'c-fifty-days', tampered.file);
    const bytes = await readFile(onDisk);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 10) ^ 0x01, bytes.length - 10);
    await writeFile(onDisk, bytes);
    expect(await upkeep()).toMatchObject({ checked: 4, renewed: 0, lapsed: 1, refused: 1, refusedKeys: ['c-fifty-days'] });

    for (const d of a.renewals![0]!.documents) {
      const renewed = await store.read('a-three-years', d.file);
      expect(await checkPdfSignature(renewed, trustAnchorsOnly(anchors), later)).toMatchObject({
        indication: 'TOTAL_PASSED',
        level: 'B-LTA',
        problems: [],
      });
      // The renewed copy extends the original byte for byte.
      const entries = new Map<string, Buffer>();
      const zipFile = join(work, `a-${randomUUID()}.zip`);
      await writeFile(zipFile, await store.read('a-three-years', 'completed.zip'));
      await verifyZip(zipFile, undefined, { open: () => holdWhole(async (e, content) => void entries.set(e.name, content)) });
      const original = entries.get(d.entry)!;
      expect(sha256(original)).toBe(d.extends);
      expect(renewed.subarray(0, original.length).equals(original)).toBe(true);
      expect((await checkPdfSignature(original, trustAnchorsOnly(anchors), later)).indication).toBe('INDETERMINATE');
    }
  });
});
