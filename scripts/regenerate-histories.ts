// `npm run replay:regenerate [-- <scenario> …]`: runs the workflows' paths
// (the transaction's and the webhook inbox's) against a real dev server and
// provider sandbox, and writes their histories to test/replay/histories/,
// which test/replay.test.ts replays on every run. Name scenarios to record
// only those (e.g. a new path); re-record existing ones only for an intended,
// released-nothing-yet change, otherwise version the change with `patched`.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { LocalArchiveStore } from '../src/archive/store.js';
import { deliverNotification } from '../src/bridge/deliver.js';
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
import { inboxIdFor } from '../workflows/inbox-definitions.js';
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
    deps: {
      minReconcileInterval: '1 second',
      client,
      archive: new LocalArchiveStore(join(work, 'archive')),
      documentRoots: [dirname(pdf)],
    },
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
  type Handle = Pick<Awaited<ReturnType<typeof start>>['handle'], 'fetchHistory' | 'query' | 'result'>;
  /** Waits until a running workflow's history satisfies `done` (an inbox stays open after its owner finished). */
  const waitForHistory = async (
    handle: Handle,
    done: (events: NonNullable<Awaited<ReturnType<Handle['fetchHistory']>>['events']>) => boolean,
  ) => {
    for (let i = 0; i < 300; i++) {
      if (done((await handle.fetchHistory()).events ?? [])) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('history never reached the expected shape');
  };
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
    for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
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
    // The inbox as the bridge drives it: a webhook forwarded to its owner, a redelivery, and one after the owner finished.
    async 'inbox-forwarded-then-stale'() {
      const { handle } = await start(input());
      const s = await signAll(handle);
      const webhook = (notificationId: string) => ({
        event: 'esign-completed' as const,
        entity: 'esign' as const,
        data: { notificationId, entity_id: s.esignId!, transaction_id: s.transactionId! },
      });
      const first = webhook(randomUUID());
      await deliverNotification(env.client, first, { taskQueue });
      await deliverNotification(env.client, first, { taskQueue });
      await handle.result();
      await deliverNotification(env.client, webhook(randomUUID()), { taskQueue });
      const inbox = env.client.workflow.getHandle(inboxIdFor(s.transactionId!));
      await waitForHistory(inbox, (events) => events.filter((e) => e.workflowExecutionSignaledEventAttributes).length >= 5);
      return inbox;
    },
    // A webhook for a transaction no workflow ever registers for.
    async 'inbox-orphaned'() {
      const transactionId = randomUUID();
      const notification = {
        event: 'esign-completed' as const,
        entity: 'esign' as const,
        data: { notificationId: randomUUID(), entity_id: randomUUID(), transaction_id: transactionId },
      };
      const { workflowId } = await deliverNotification(env.client, notification, { taskQueue, orphanAfter: '2 seconds' });
      const inbox = env.client.workflow.getHandle(workflowId);
      await inbox.result();
      return inbox;
    },
  };
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in scenarios));
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}`);

  await mkdir(outDir, { recursive: true });
  await worker.runUntil(async () => {
    for (const [name, run] of Object.entries(scenarios)) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
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
