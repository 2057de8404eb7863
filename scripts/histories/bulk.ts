// The bulk send's paths, recorded by scripts/regenerate-histories.ts on a worker of its own with a template store
// and batch files: a small batch with a bad row signed to its end, and one cancelled while it sends.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { batchProgress, cancelBatch, sendBulk } from '../../src/client/bulk.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { LocalTemplateStore } from '../../src/templates/index.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { eventually } from '../../test/support/eventually.js';
import { NDA_DEFINITION, ndaCsv } from '../../test/support/nda-template.js';
import type { ScenarioContext } from './state-machine.js';

type Recorded = Pick<WorkflowHandle, 'fetchHistory'>;

export function bulkScenarios(ctx: ScenarioContext): Record<string, () => Promise<Recorded>> {
  const { temporal, sandbox } = ctx;
  const onBulkWorker = async <T>(
    name: string,
    body: (stores: { taskQueue: string; objects: LocalObjectStore; templates: LocalTemplateStore }) => Promise<T>,
  ) => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-histories-bulk-'));
    await writeFile(join(dir, 'nda.pdf'), await samplePdf('Non-disclosure agreement'));
    const templates = new LocalTemplateStore(dir);
    const objects = new LocalObjectStore(dir);
    await templates.create(structuredClone(NDA_DEFINITION) as never, dir);
    const taskQueue = `${ctx.taskQueue}-${name}`;
    const worker = await createEsignWorker({ connection: ctx.connection, taskQueue, deps: { ...ctx.deps, templates, objects } });
    return worker.runUntil(body({ taskQueue, objects, templates }));
  };
  /** Signs every pending provider transaction of the batch. */
  const signBatch = async (batchId: string) => {
    const { data } = await ctx.deps.client.listTransactions({ status: 'esign_pending', limit: 500 });
    for (const t of data.filter((x) => x.referenceId?.startsWith(`${batchId}.`)))
      for (const p of t.participants) await sandbox.controls.signAs(t.id, p.id).catch(() => undefined);
  };
  return {
    // Three rows, one of them bad: two transactions signed and archived, the bad row reported, the result written.
    async 'bulk-send'() {
      return onBulkWorker('bulk', async (stores) => {
        const csv = Buffer.concat([ndaCsv(2), Buffer.from('not an address,Acme\n')]);
        const batch = await sendBulk(temporal, stores, {
          name: 'Recorded',
          template: 'NDA-bulk',
          csv,
          reconcileInterval: '1 second',
          taskQueue: stores.taskQueue,
        });
        await eventually('both transactions signable', async () => (await batchProgress(temporal, batch.batchId)).waiting === 2);
        await signBatch(batch.batchId);
        await batch.handle.result();
        return batch.handle;
      });
    },
    // Cancelled while it sends: the started transactions are withdrawn, the rest never start.
    async 'bulk-send-cancelled'() {
      return onBulkWorker('bulk-cancel', async (stores) => {
        const batch = await sendBulk(temporal, stores, {
          name: 'Cancelled',
          template: 'NDA-bulk',
          csv: ndaCsv(60),
          maxInFlight: 25,
          reconcileInterval: '1 second',
          taskQueue: stores.taskQueue,
        });
        await eventually('a page started', async () => (await batchProgress(temporal, batch.batchId)).started >= 25);
        await cancelBatch(temporal, batch.batchId, 'recorded cancel');
        await batch.handle.result();
        return batch.handle;
      });
    },
  };
}
