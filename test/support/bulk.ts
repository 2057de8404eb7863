// A bulk-send test bed on the suite's dev server: a template store with an NDA template, the batch files' store,
// a worker, the real webhook bridge, and a signer that signs every transaction of a batch as it becomes signable.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from '@temporalio/worker';
import { parse } from 'csv-parse/sync';
import { inject } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import type { RunningBridge } from '../../src/bridge/index.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { LocalTemplateStore, type StoredTemplate } from '../../src/templates/index.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { startTestBridge } from './bridge.js';
import { NDA_DEFINITION } from './nda-template.js';

export { NDA_DEFINITION, ndaCsv } from './nda-template.js';
import type { TestSandbox } from './sandbox.js';
import { uniqueTaskQueue, type TemporalTestContext } from './temporal.js';

export interface BulkBed {
  taskQueue: string;
  templates: LocalTemplateStore;
  objects: LocalObjectStore;
  template: StoredTemplate;
  /** Where the stores are: what a worker in another process is given as ESIGN_TEMPLATE_STORE. */
  storeDir: string;
  archiveDir: string;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /**
   * Signs every transaction of the batch that awaits signatures, until `stop` is called; how many it signed. Rows
   * with a referenceId of their own are named in `ownReferences` (the provider knows nothing of batches).
   */
  signBatch(batchId: string, ownReferences?: string[]): { stop(): Promise<number> };
  close(): Promise<void>;
}

/** The result CSV as records. */
export function resultRows(csv: Buffer): Record<string, string>[] {
  return parse<Record<string, string>>(csv, { columns: true });
}

export async function bulkBed(ctx: TemporalTestContext, sandbox: TestSandbox, prefix: string): Promise<BulkBed> {
  const storeDir = await mkdtemp(join(tmpdir(), 'esign-bulk-store-'));
  const archiveDir = await mkdtemp(join(tmpdir(), 'esign-bulk-archive-'));
  const defDir = await mkdtemp(join(tmpdir(), 'esign-bulk-template-'));
  await writeFile(join(defDir, 'nda.pdf'), await samplePdf('Non-disclosure agreement'));
  const templates = new LocalTemplateStore(storeDir);
  const objects = new LocalObjectStore(storeDir);
  const template = await templates.create(structuredClone(NDA_DEFINITION) as never, defDir);
  const taskQueue = uniqueTaskQueue(prefix);
  const bridge: RunningBridge = await startTestBridge({
    address: inject('temporalAddress'),
    taskQueue,
    secrets: [sandbox.running.webhookSecret],
    provider: { url: sandbox.running.url, token: sandbox.token },
  });
  sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
  let worker: { worker: Worker; running: Promise<void> } | undefined;
  const bed: BulkBed = {
    taskQueue,
    templates,
    objects,
    template,
    storeDir,
    archiveDir,
    async startWorker() {
      const w = await createEsignWorker({
        connection: ctx.nativeConnection,
        namespace: ctx.namespace,
        taskQueue,
        deps: {
          minReconcileInterval: '1 second',
          client: sandbox.client,
          archive: new LocalArchiveStore(archiveDir),
          templates,
          objects,
        },
      });
      worker = { worker: w, running: w.run() };
    },
    async stopWorker() {
      if (!worker) return;
      worker.worker.shutdown();
      await worker.running;
      worker = undefined;
    },
    signBatch(batchId, ownReferences = []) {
      let stopped = false;
      const signed = new Set<string>();
      const loop = (async () => {
        while (!stopped) {
          // The provider may be injecting 429s (a storm test): a failed pass is tried again on the next.
          await signWaiting(sandbox, batchId, ownReferences, signed).catch(() => undefined);
          await new Promise((r) => setTimeout(r, 300));
        }
        return signed.size;
      })();
      return {
        async stop() {
          stopped = true;
          return loop;
        },
      };
    },
    async close() {
      await bed.stopWorker();
      sandbox.running.webhookUrls.splice(sandbox.running.webhookUrls.indexOf(`${bridge.url}/webhooks/esign`), 1);
      await bridge.stop();
    },
  };
  return bed;
}

/** Signs, through the sandbox, every pending provider transaction of the batch (eight at a time). */
async function signWaiting(sandbox: TestSandbox, batchId: string, ownReferences: string[], signed: Set<string>): Promise<void> {
  const pending: { id: string; participants: string[] }[] = [];
  for (let offset = 0; ; offset += 500) {
    const { data } = await sandbox.client.listTransactions({ status: 'esign_pending', limit: 500, offset });
    for (const t of data) {
      const ours = t.referenceId?.startsWith(`${batchId}.`) || ownReferences.includes(t.referenceId ?? '');
      if (!ours || signed.has(t.id)) continue;
      pending.push({ id: t.id, participants: t.participants.filter((p) => p.status !== 'signed').map((p) => p.id) });
    }
    if (data.length < 500) break;
  }
  for (let i = 0; i < pending.length; i += 8) {
    await Promise.all(
      pending.slice(i, i + 8).map(async (t) => {
        // Refused when a cancel withdrew it meanwhile: then it is not signed, and the checks say so.
        for (const p of t.participants) await sandbox.control.signAs(t.id, p).catch(() => undefined);
        signed.add(t.id);
      }),
    );
  }
}
