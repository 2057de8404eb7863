// The evidence upkeep's Temporal Schedule on the real dev server, with the real sandbox over HTTP as the
// time-stamping authority and revocation source: created by the function the worker calls at start, kept as an
// operator left it when the worker starts again, and triggered, it starts the upkeep, which renews an archive
// whose time-stamp's certificate ends within the horizon (50 days) with the sandbox's TSA (three years).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpTimestampAuthority } from '@libpdf/core';
import { Worker } from '@temporalio/worker';
import { expect, expectTypeOf, it } from 'vitest';
import { createEvidenceUpkeepActivities } from '../../activities/evidence-upkeep.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { ensureEvidenceUpkeepSchedule } from '../../src/client/evidence-upkeep.js';
import type { EvidenceUpkeepResult, EvidenceUpkeepWorkflow } from '../../src/definitions/evidence-upkeep.js';
import type { evidenceUpkeep } from '../../workflows/evidence-upkeep.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { parseCertificates } from '../../src/evidence/pki.js';
import { HttpRevocationProvider } from '../../src/evidence/revocation-client.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { pdfsig, pyhanko } from '../support/evidence.js';
import { eventually } from '../support/eventually.js';
import { archiveSealedBy, YEAR } from '../support/renewal.js';
import { devServerAndSandbox } from '../support/sandbox.js';
import { uniqueTaskQueue } from '../support/temporal.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

const DAY = 24 * 3600 * 1000;
const env = devServerAndSandbox();

it('the signature clients start the upkeep by (src/definitions/) is the workflow’s own', () => {
  expectTypeOf<typeof evidenceUpkeep>().toEqualTypeOf<EvidenceUpkeepWorkflow>();
});

it('the Schedule starts the upkeep, which renews what is due with the sandbox TSA; a worker restart keeps an operator’s pause', async () => {
  const { ctx, sandbox } = env;
  const work = await mkdtemp(join(tmpdir(), 'esign-upkeep-schedule-'));
  const soon = await SandboxSeal.open(join(work, 'pki-soon'), { now: new Date(Date.now() - 3 * YEAR + 50 * DAY), renewBefore: 0 });
  const store = new LocalArchiveStore(join(work, 'archive'));
  await archiveSealedBy(store, work, soon, 'tx-soon');
  const anchors = [...parseCertificates(soon.caCertificate), ...parseCertificates(sandbox.running.caCertificate)];
  const base = sandbox.running.url;
  const taskQueue = uniqueTaskQueue('upkeep-schedule');
  const scheduleId = `esign-evidence-upkeep-${taskQueue}`;
  const worker = await Worker.create({
    connection: ctx.nativeConnection,
    namespace: ctx.namespace,
    taskQueue,
    workflowsPath,
    activities: createEvidenceUpkeepActivities({
      archive: store,
      upkeep: {
        sources: {
          timestampAuthority: new HttpTimestampAuthority(`${base}/sandbox/tsa`),
          revocationProvider: new HttpRevocationProvider({ ocspUrl: `${base}/sandbox/ocsp`, crlUrl: `${base}/sandbox/ca.crl` }),
        },
        policy: { trust: trustAnchorsOnly(anchors), horizonMs: 180 * DAY },
      },
    }),
  });
  const schedule = ctx.client.schedule.getHandle(scheduleId);
  try {
    await worker.runUntil(async () => {
      expect(await ensureEvidenceUpkeepSchedule(ctx.client, { taskQueue, every: '1 day', scheduleId })).toBe('created');
      // An operator pauses it; the worker starts again (with a new interval): the pause stays, the interval follows.
      await schedule.pause('operator: archive migration');
      expect(await ensureEvidenceUpkeepSchedule(ctx.client, { taskQueue, every: '12 hours', scheduleId })).toBe('updated');
      const described = await schedule.describe();
      expect(described.state.paused).toBe(true);
      expect(described.spec.intervals?.[0]?.every).toBe(12 * 3600 * 1000);
      await schedule.unpause();

      await schedule.trigger();
      const started = await eventually(
        'the Schedule started the upkeep',
        async () => (await schedule.describe()).info.recentActions[0]?.action.workflow,
      );
      const result: EvidenceUpkeepResult = await ctx.client.workflow
        .getHandle<EvidenceUpkeepWorkflow>(started.workflowId, started.firstExecutionRunId)
        .result();
      expect(result).toMatchObject({ checked: 1, renewed: 1, lapsed: 0, refused: 0 });
    });
  } finally {
    await schedule.delete().catch(() => undefined);
  }
  const { manifest } = (await store.find('tx-soon'))!;
  expect(manifest.renewals).toHaveLength(1);
  for (const d of manifest.renewals![0]!.documents) {
    const renewed = await store.read('tx-soon', d.file);
    // Valid a year after the old TSA certificate ended, on the sandbox TSA's word.
    const check = await checkPdfSignature(renewed, trustAnchorsOnly(anchors), new Date(Date.now() + YEAR));
    expect(check).toMatchObject({ indication: 'TOTAL_PASSED', level: 'B-LTA', problems: [] });
    expect(check.archiveTimestamps).toHaveLength(2);
    // Validators nobody here wrote: poppler reads the seal and both document time-stamps; pyHanko, trusting only
    // the two CAs, finds the seal intact and trusted, extended by LTA updates only.
    const report = await pdfsig(renewed);
    expect(report.match(/Signature #\d/g)).toHaveLength(3);
    expect(report).not.toMatch(/Signature is Invalid/);
    const { code, out } = await pyhanko('validate', renewed, `${soon.caCertificate}\n${sandbox.running.caCertificate}`);
    expect({ entry: d.entry, code }).toEqual({ entry: d.entry, code: 0 });
    expect(out).toMatch(/:INTACT:TRUSTED,TIMESTAMP_TOKEN<INTACT:TRUSTED>,EXTENDED_WITH_LTA_UPDATES,ACCEPTABLE_MODIFICATIONS/);
  }
});
