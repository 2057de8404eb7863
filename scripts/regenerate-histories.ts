// `npm run replay:regenerate`: runs the workflow's main paths against a real
// dev server and sandbox, and writes their histories to test/replay/histories/,
// which test/replay.test.ts replays on every run. Regenerate only for an
// intended, released-nothing-yet change; otherwise version with `patched`.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { LocalArchiveStore } from '../src/archive/store.js';
import { startEsignTransaction } from '../src/client/transactions.js';
import { EsignClient } from '../src/esign/client.js';
import { sandboxConfig, startSandbox } from '../src/sandbox/index.js';
import { samplePdf } from '../src/sandbox/pdf.js';
import { ensureTemporalBinaries, executableFor } from '../src/temporal/binaries.js';
import { createEsignWorker } from '../src/worker/create-worker.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
} from '../workflows/definitions.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { esignSearchAttributes } from '../workflows/search-attributes.js';

const outDir = fileURLToPath(new URL('../test/replay/histories/', import.meta.url));

async function main(): Promise<void> {
  const { cli } = await ensureTemporalBinaries('cli');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: executableFor(cli), ip: '127.0.0.1', searchAttributes: [...esignSearchAttributes] },
  });
  const work = await mkdtemp(join(tmpdir(), 'esign-histories-'));
  const sandbox = await startSandbox(sandboxConfig({ dataDir: join(work, 'sandbox') }));
  const client = new EsignClient({ baseUrl: sandbox.url, token: await sandbox.issueToken() });
  const pdf = join(work, 'docs', 'contract.pdf');
  await mkdir(dirname(pdf), { recursive: true });
  await writeFile(pdf, await samplePdf('Contract'));
  const taskQueue = 'replay-histories';
  const worker = await createEsignWorker({
    connection: env.nativeConnection,
    taskQueue,
    deps: { client, archive: new LocalArchiveStore(join(work, 'archive')), documentRoots: [dirname(pdf)] },
  });

  const input = (overrides: Partial<EsignTransactionInput> = {}): EsignTransactionInput => ({
    referenceId: `replay-${randomUUID()}`,
    documents: [
      {
        title: 'Contract',
        source: { path: pdf },
        tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
      },
    ],
    participants: [
      { email: 'signer@example.com', firstName: 'Sam', lastName: 'Signer', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    notifyParticipants: { email: false },
    ...overrides,
  });
  const start = (i: EsignTransactionInput) => startEsignTransaction(env.client, i, { taskQueue });
  type Handle = Awaited<ReturnType<typeof start>>['handle'];
  const awaitPhase = async (handle: Handle, phase: string) => {
    for (let i = 0; i < 300; i++) {
      const s = await handle.query(statusQuery);
      if (s.phase === phase) return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`never reached ${phase}`);
  };
  const signAll = async (handle: Handle) => {
    const s = await awaitPhase(handle, 'awaiting_signatures');
    for (const p of s.participants) await sandbox.sandbox.signAs(s.transactionId!, p.id);
    return s;
  };

  const scenarios: Record<string, () => Promise<Handle>> = {
    async 'completed-by-webhook'() {
      const { handle } = await start(input());
      const s = await signAll(handle);
      await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [s.participants[0]!.id] }] }).catch(() => undefined);
      await handle.signal(esignCompletedSignal, {
        event: 'esign-completed',
        entity: 'esign',
        data: { notificationId: randomUUID(), entity_id: s.esignId!, transaction_id: s.transactionId! },
      });
      await handle.result();
      return handle;
    },
    async 'completed-by-reconciliation'() {
      const { handle } = await start(input({ reconcileInterval: '1 second' }));
      await signAll(handle);
      await handle.result();
      return handle;
    },
    async 'draft-sent-then-completed'() {
      const { handle } = await start(input({ status: 'draft', reconcileInterval: '1 second' }));
      await awaitPhase(handle, 'draft');
      await handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] });
      await signAll(handle);
      await handle.result();
      return handle;
    },
    async cancelled() {
      const { handle } = await start(input());
      await awaitPhase(handle, 'awaiting_signatures');
      await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
      await handle.result();
      return handle;
    },
    async expired() {
      const { handle } = await start(input({ signingDeadline: '3 seconds', reconcileInterval: '1 second' }));
      await handle.result();
      return handle;
    },
  };

  await mkdir(outDir, { recursive: true });
  await worker.runUntil(async () => {
    for (const [name, run] of Object.entries(scenarios)) {
      const handle = await run().catch((err: unknown) => {
        console.error(`scenario ${name} failed:`, err);
        throw err;
      });
      const history = await handle.fetchHistory();
      await writeFile(join(outDir, `${name}.json`), historyToJSON(history));
      process.stdout.write(`wrote ${name}.json (${history.events?.length ?? 0} events)\n`);
    }
  });
  await client.close();
  await sandbox.stop();
  await env.teardown();
  await rm(work, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
