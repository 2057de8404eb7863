// `npm run replay:regenerate [-- <scenario> …]`: runs the workflows' paths
// (the transaction's, the bulk send's, the webhook inbox's and the late
// completion's) against a real dev server and provider sandbox, and writes
// their histories to test/replay/histories/<the package's version>/, which
// test/workflows/replay.test.ts replays on every run. Name scenarios to record only
// those (e.g. a new path); re-record existing ones only for a change not yet
// released; a released version's histories stay as they are
// (docs/decisions/versioning-policy.md).
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { NativeConnection } from '@temporalio/worker';
import type { ActivityDeps } from '../activities/index.js';
import { HttpTimestampAuthority } from '@libpdf/core';
import { startDevServer } from '../tools/temporal/dev-server.js';
import { HttpRevocationProvider } from '../src/evidence/revocation-client.js';
import { stateMachineScenarios } from './histories/state-machine.js';
import { bulkScenarios } from './histories/bulk.js';
import { LocalArchiveStore } from '../src/archive/store.js';
import { deliverNotification, providerOwners, type OwnerDirectory } from '../src/bridge/deliver.js';
import { startEsignTransaction } from '../src/client/transactions.js';
import { EsignClient } from '../src/esign/client.js';
import { sandboxConfig, startSandbox, type RunningSandbox } from '../packages/sandbox/src/index.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { ensureTemporalBinaries } from '../tools/temporal/binaries.js';
import { createEsignWorker } from '../src/worker/create-worker.js';
import type { EsignEndWebhook } from '../src/esign/schemas.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  esignEventSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
} from '../src/definitions/transaction.js';
import {
  lateCompletionIdFor,
  lateCompletionStatusQuery,
  lateRetryArchiveUpdate,
  type EsignLateCompletionWorkflow,
} from '../src/definitions/late-completion.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { inboxIdFor } from '../src/definitions/inbox.js';
import { eventually } from '../test/support/eventually.js';
import { createCertificateAuthority, parseCertificates } from '../src/evidence/pki.js';
import { providerTrust, trustAnchorsOnly } from '../src/evidence/trust.js';

const { version } = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as { version: string };
const outDir = fileURLToPath(new URL(`../test/replay/histories/${version}/`, import.meta.url));

/** The dev server is a process of its own: a failed scenario must not leave it running after this one exits. */
let stopServer: (() => Promise<void>) | undefined;

async function main(): Promise<void> {
  const { cli } = await ensureTemporalBinaries('cli');
  const env = await startDevServer({ cliPath: cli });
  stopServer = () => env.teardown();
  const work = await mkdtemp(join(tmpdir(), 'esign-histories-'));
  const sandbox = await startSandbox(sandboxConfig({ dataDir: join(work, 'sandbox') }));
  const client = new EsignClient({ baseUrl: sandbox.url, token: await sandbox.issueToken() });
  const pdf = join(work, 'docs', 'contract.pdf');
  await mkdir(dirname(pdf), { recursive: true });
  await writeFile(pdf, await samplePdf('Contract'));
  const taskQueue = 'replay-histories';
  // The integrator's backend: accepts every event (their signatures are tested in test/workflows/integrator-events.test.ts).
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
  const deps: ActivityDeps = {
    minReconcileInterval: '1 second',
    callbackSecrets: [`whsec_${randomBytes(24).toString('base64')}`],
    allowedUrls: [new URL(callbackUrl).origin],
    client,
    archive: new LocalArchiveStore(join(work, 'archive')),
    documentRoots: [dirname(pdf)],
    evidence: { signatures: 'require', trust: providerTrust(sandbox), requireCompletionCertificate: true },
    upkeep: {
      sources: {
        timestampAuthority: new HttpTimestampAuthority(`${sandbox.url}/sandbox/tsa`),
        revocationProvider: new HttpRevocationProvider({ ocspUrl: `${sandbox.url}/sandbox/ocsp`, crlUrl: `${sandbox.url}/sandbox/ca.crl` }),
      },
      // Everything is due: the history records a renewal (the sandbox TSA's certificate outlasts none of its own,
      // so the renewal is refused, reported, and the walk goes on).
      policy: { trust: providerTrust(sandbox), horizonMs: 10 * 365 * 24 * 3600 * 1000 },
    },
  };
  const worker = await createEsignWorker({ connection: env.nativeConnection, taskQueue, deps });

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
  const awaitPhase = async (handle: Handle, phase: string) => {
    for (let i = 0; i < 300; i++) {
      const s = await handle.query(statusQuery);
      if (s.phase === phase) return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`never reached ${phase}`);
  };
  const waitFor = async (done: () => Promise<boolean>) => {
    for (let i = 0; i < 300; i++) {
      if (await done()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('never happened');
  };
  const signer = (firstName: string) =>
    ({
      email: `${firstName.toLowerCase()}@example.com`,
      firstName,
      lastName: 'Signer',
      authenticationType: 'none',
      twoFactorContact: 'email',
    }) as const;
  const signAll = async (handle: Handle, ...phases: string[]) => {
    const s = phases.length > 0 ? await handle.query(statusQuery) : await awaitPhase(handle, 'awaiting_signatures');
    for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
    return s;
  };

  const webhook = (event: EsignEndWebhook['event'], ids: { transactionId: string | null; esignId: string | null }): EsignEndWebhook => ({
    event,
    entity: 'esign',
    data: { notificationId: randomUUID(), entity_id: ids.esignId!, transaction_id: ids.transactionId! },
  });

  // Each scenario returns the handle whose history it records, or several (file suffix -> handle).
  const scenarios: Record<string, () => Promise<Handle | Record<string, Handle>>> = {
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
    // A signing URL asked with the start (update-with-start): its local activity waits for the registration's.
    async 'signing-url-with-start'() {
      const participantId = randomUUID();
      const i = input({ participants: [{ ...signer('Uma'), id: participantId }], reconcileInterval: '1 second' });
      const { handle } = await startEsignTransaction(env.client, i, { taskQueue, signingUrlFor: { participantIds: [participantId] } });
      await signAll(handle);
      await handle.result();
      return handle;
    },
    // The upload's SHA-256 goes to the archive, which records the seals' evidence in the result.
    async 'completed-with-evidence'() {
      const { handle } = await start(input({ reconcileInterval: '1 second' }));
      await signAll(handle);
      await handle.result();
      return handle;
    },
    // The evidence upkeep the Schedule starts: a page of archives, each judged and (here) due for renewal.
    async 'evidence-upkeep'() {
      const { handle } = await start(input({ reconcileInterval: '1 second' }));
      await signAll(handle);
      await handle.result();
      const upkeep = await env.client.workflow.start('evidenceUpkeep', { taskQueue, workflowId: `upkeep-${randomUUID()}`, args: [{}] });
      await upkeep.result();
      return upkeep;
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
    // Cancel withdraws the transaction at the provider, then ends.
    async cancelled() {
      const { handle } = await start(input());
      await awaitPhase(handle, 'awaiting_signatures');
      await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
      await handle.result();
      return handle;
    },
    // Cancel refused (a participant has signed), then completed.
    async 'cancel-refused-then-completed'() {
      const { handle } = await start(input({ participants: [signer('Sam'), signer('Sue')] }));
      const s = await awaitPhase(handle, 'awaiting_signatures');
      await sandbox.controls.signAs(s.transactionId!, s.participants[0]!.id);
      await handle.executeUpdate(cancelUpdate, { args: [{}] }).catch(() => undefined);
      await sandbox.controls.signAs(s.transactionId!, s.participants[1]!.id);
      await handle.signal(esignCompletedSignal, webhook('esign-completed', s) as never);
      await handle.result();
      return handle;
    },
    // The deadline passes after one of two signed: overdue, then completed by reconciliation.
    async 'overdue-then-completed'() {
      const { handle } = await start(
        input({ participants: [signer('Sam'), signer('Sue')], signingDeadline: '3 seconds', reconcileInterval: '1 second' }),
      );
      const s = await awaitPhase(handle, 'awaiting_signatures');
      await sandbox.controls.signAs(s.transactionId!, s.participants[0]!.id);
      await awaitPhase(handle, 'overdue');
      await sandbox.controls.signAs(s.transactionId!, s.participants[1]!.id);
      await handle.result();
      return handle;
    },
    // A signer declines; the provider's webhook arrives as an esignEvent signal.
    async declined() {
      const { handle } = await start(input());
      const s = await awaitPhase(handle, 'awaiting_signatures');
      sandbox.controls.declineAs(s.transactionId!, s.participants[0]!.id, 'replay scenario');
      await handle.signal(esignEventSignal, webhook('esign-declined', s));
      await handle.result();
      return handle;
    },
    // The provider cancels the transaction itself; reconciliation finds it.
    async 'provider-cancelled'() {
      const { handle } = await start(input({ reconcileInterval: '1 second' }));
      const s = await awaitPhase(handle, 'awaiting_signatures');
      sandbox.controls.forceEnd(s.transactionId!, 'cancelled');
      await handle.result();
      return handle;
    },
    // Two signers: a reminder, one signs (its webhook arrives), the second signs; every event goes to the callback.
    async 'progress-reminders-and-events'() {
      const { handle } = await start(
        input({
          participants: [signer('Sam'), signer('Sue')],
          callbackUrl,
          reminders: { firstAfter: '1 second', every: '1 hour', maxCount: 2 },
        }),
      );
      const s = await awaitPhase(handle, 'awaiting_signatures');
      await waitFor(async () =>
        (await handle.fetchHistory()).events!.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes != null),
      );
      await sandbox.controls.signAs(s.transactionId!, s.participants[0]!.id);
      await handle.signal(esignEventSignal, {
        event: 'esign-participant-signed',
        entity: 'esign',
        data: {
          notificationId: randomUUID(),
          entity_id: s.esignId!,
          transaction_id: s.transactionId!,
          participant_id: s.participants[0]!.id,
        },
      });
      await waitFor(async () => (await handle.query(statusQuery)).participants[0]!.status === 'signed');
      await sandbox.controls.signAs(s.transactionId!, s.participants[1]!.id);
      await handle.signal(esignCompletedSignal, webhook('esign-completed', s) as never);
      await handle.result();
      return handle;
    },
    // Two runs joined by continue-as-new (a server suggesting it after 40 events), completed by a webhook in the second.
    // Worker Versioning: a run pinned to v1 hands over when v2 becomes current, and its next run starts on v2.
    async 'upgraded-at-continue-as-new'() {
      const queue = `${taskQueue}-versioned`;
      const deployment = `esign-replay-${randomUUID().slice(0, 8)}`;
      const versioned = (buildId: string) =>
        createEsignWorker({ connection: env.nativeConnection, taskQueue: queue, deployment: { name: deployment, buildId }, deps });
      const current = async (buildId: string) => {
        for (let i = 0; ; i++) {
          try {
            await env.client.workflowService.setWorkerDeploymentCurrentVersion({
              namespace: 'default',
              deploymentName: deployment,
              buildId,
              identity: 'replay',
            });
            return;
          } catch (err) {
            if (i > 100) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      };
      const v1 = await versioned('v1');
      const v2 = await versioned('v2');
      const running = [v1.run(), v2.run()];
      try {
        await current('v1');
        const { handle } = await startEsignTransaction(env.client, input({ reconcileInterval: '1 second' }), { taskQueue: queue });
        await awaitPhase(handle, 'awaiting_signatures');
        const first = env.client.workflow.getHandle(handle.workflowId, (await handle.describe()).runId);
        await current('v2');
        await waitFor(async () => (await first.describe()).status.name === 'CONTINUED_AS_NEW');
        const last = env.client.workflow.getHandle(handle.workflowId);
        await signAll(last);
        await last.result();
        const second = env.client.workflow.getHandle(handle.workflowId, (await last.describe()).runId);
        return { '-1': first, '-2': second };
      } finally {
        v1.shutdown();
        v2.shutdown();
        await Promise.all(running);
      }
    },
    async 'continued-as-new'() {
      const small = await startDevServer({
        cliPath: cli,
        extraArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40'],
      });
      try {
        const smallWorker = await createEsignWorker({
          connection: small.nativeConnection,
          taskQueue,
          deps: {
            minReconcileInterval: '1 second',
            client,
            archive: new LocalArchiveStore(join(work, 'archive')),
            documentRoots: [dirname(pdf)],
          },
        });
        return await smallWorker.runUntil(async () => {
          const { handle } = await startEsignTransaction(
            small.client,
            input({ reconcileInterval: '1 second', reconcileMaxInterval: '1 second' }),
            {
              taskQueue,
            },
          );
          const s = await awaitPhase(handle, 'awaiting_signatures');
          const first = small.client.workflow.getHandle(handle.workflowId, (await handle.describe()).runId);
          await waitFor(async () => (await first.describe()).status.name === 'CONTINUED_AS_NEW');
          for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
          await small.client.workflow.getHandle(handle.workflowId).signal(esignCompletedSignal, webhook('esign-completed', s) as never);
          const last = small.client.workflow.getHandle(handle.workflowId);
          await last.result();
          const second = small.client.workflow.getHandle(handle.workflowId, (await last.describe()).runId);
          // Recorded while this server lives: fetch both histories now.
          const [h1, h2] = await Promise.all([first.fetchHistory(), second.fetchHistory()]);
          const fixed = (h: typeof h1): Handle => ({
            fetchHistory: async () => h,
            query: handle.query.bind(handle),
            result: handle.result.bind(handle),
          });
          return { '-1': fixed(h1), '-2': fixed(h2) };
        });
      } finally {
        await small.teardown();
      }
    },
    // A withdrawn transaction sent again by someone else and signed: its inbox starts a late completion.
    async 'late-completion'() {
      const { handle } = await start(input());
      const s = await awaitPhase(handle, 'awaiting_signatures');
      await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
      await handle.result();
      await resendWithdrawn(client, s.transactionId!);
      await signAll(handle, 'awaiting_signatures', 'cancelled');
      await deliverNotification(env.client, webhook('esign-completed', s), { taskQueue, owners: providerOwners(client) });
      const late = env.client.workflow.getHandle(lateCompletionIdFor(s.transactionId!));
      await waitFor(async () => (await late.describe().catch(() => undefined))?.status.name === 'COMPLETED');
      return { '': late, '-inbox': env.client.workflow.getHandle(inboxIdFor(s.transactionId!)) };
    },
    // An earlier transaction of a reused referenceId completes late: its completion reaches the next run of the
    // referenceId (the bridge routes by it), which confirms it and starts the late completion with what the first left.
    async 'stray-completion'() {
      const first = await start(input());
      const s = await awaitPhase(first.handle, 'awaiting_signatures');
      await first.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
      await first.handle.result();
      const { handle } = await start(input({ referenceId: s.referenceId }));
      await awaitPhase(handle, 'awaiting_signatures');
      await resendWithdrawn(client, s.transactionId!);
      for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
      await deliverNotification(env.client, webhook('esign-completed', s), { taskQueue, owners: providerOwners(client) });
      const late = env.client.workflow.getHandle(lateCompletionIdFor(s.transactionId!));
      await waitFor(async () => (await late.describe().catch(() => undefined))?.status.name === 'COMPLETED');
      await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
      await handle.result();
      return handle;
    },
    async expired() {
      const { handle } = await start(input({ signingDeadline: '3 seconds', reconcileInterval: '1 second' }));
      await handle.result();
      return handle;
    },
    // A completion of a transaction no workflow owns: closed as orphaned after its time, and archived late.
    async 'inbox-orphaned'() {
      const transactionId = randomUUID();
      const notification = {
        event: 'esign-completed' as const,
        entity: 'esign' as const,
        data: { notificationId: randomUUID(), entity_id: randomUUID(), transaction_id: transactionId },
      };
      const { workflowId } = await deliverNotification(env.client, notification, {
        taskQueue,
        orphanAfter: '2 seconds',
        owners: providerOwners(client),
      });
      const inbox = env.client.workflow.getHandle(workflowId!);
      await inbox.result();
      return inbox;
    },
  };
  Object.assign(
    scenarios,
    stateMachineScenarios({ temporal: env.client, connection: env.nativeConnection, sandbox, taskQueue, deps, input, callbackUrl }),
  );
  Object.assign(
    scenarios,
    bulkScenarios({ temporal: env.client, connection: env.nativeConnection, sandbox, taskQueue, deps, input, callbackUrl }),
  );
  Object.assign(
    scenarios,
    inboxScenarios({ temporal: env.client, connection: env.nativeConnection, sandbox, taskQueue, pdf, deps, callbackUrl }),
  );
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in scenarios));
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}`);

  await mkdir(outDir, { recursive: true });
  await worker.runUntil(async () => {
    for (const [name, run] of Object.entries(scenarios)) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
      const recorded = await run().catch((err: unknown) => {
        console.error(`scenario ${name} failed:`, err);
        throw err;
      });
      const handles: Record<string, Handle> = 'fetchHistory' in recorded ? { '': recorded as Handle } : recorded;
      for (const [suffix, handle] of Object.entries(handles)) {
        const history = await handle.fetchHistory();
        await writeFile(join(outDir, `${name}${suffix}.json`), historyToJSON(history));
        process.stdout.write(`wrote ${name}${suffix}.json (${history.events?.length ?? 0} events)\n`);
      }
    }
  });
  receiver.close();
  await client.close();
  await sandbox.stop();
  await env.teardown();
  await rm(work, { recursive: true, force: true });
}

// ------------------------------------------------ the inbox's and late completion's own paths
//
// Self-contained: each takes only what main() set up (the server, the sandbox, the worker's task queue
// and dependencies) and builds its own transactions.

interface InboxScenarioContext {
  temporal: Client;
  connection: NativeConnection;
  sandbox: RunningSandbox;
  /** The task queue of main()'s worker. */
  taskQueue: string;
  pdf: string;
  /** main()'s worker's dependencies, for a worker of a scenario's own (and its evidence policy, which a scenario may change). */
  deps: ActivityDeps;
  /** The integrator's backend, which accepts every event. */
  callbackUrl: string;
}

type Recorded = Pick<WorkflowHandle, 'fetchHistory'>;

/** Someone sends a withdrawn transaction (a draft again) through the API as it was: it is signable once more. */
async function resendWithdrawn(esign: EsignClient, transactionId: string) {
  const record = await esign.getTransaction(transactionId);
  await esign.updateTransaction(transactionId, {
    status: 'esign_pending',
    referenceId: record.referenceId!,
    documents: record.documents.map((d) => ({ id: d.id!, title: d.title!, StoragePath: d.StoragePath, tags: d.tags ?? [] })),
    participants: record.participants.map(({ status: _s, signedAt: _a, declinedAt: _d, declineReason: _r, ...p }) => p) as never,
  });
  return record;
}

function inboxScenarios(ctx: InboxScenarioContext): Record<string, () => Promise<Recorded | Record<string, Recorded>>> {
  const { temporal, sandbox, taskQueue } = ctx;
  const esign = ctx.deps.client;
  const input = (referenceId = `replay-${randomUUID()}`): EsignTransactionInput => ({
    referenceId,
    documents: [
      {
        title: 'Contract',
        source: { path: ctx.pdf },
        tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
      },
    ],
    participants: [
      { email: 'signer@example.com', firstName: 'Sam', lastName: 'Signer', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    notifyParticipants: { email: false },
    reconcileInterval: '1 hour',
  });
  const completion = (ids: { transactionId: string; esignId: string }) => ({
    event: 'esign-completed' as const,
    entity: 'esign' as const,
    data: { notificationId: randomUUID(), entity_id: ids.esignId, transaction_id: ids.transactionId },
  });
  const deliver = (ids: { transactionId: string; esignId: string }) =>
    deliverNotification(temporal, completion(ids), { taskQueue, owners: providerOwners(esign) });
  /** A transaction workflow cancelled while awaiting signatures (its record withdrawn to a draft). */
  const cancelled = async (overrides: Partial<EsignTransactionInput> = {}) => {
    const { handle } = await startEsignTransaction(temporal, { ...input(), ...overrides }, { taskQueue });
    const s = await eventually('awaiting signatures', async () => {
      const status = await handle.query(statusQuery);
      return status.phase === 'awaiting_signatures' && status;
    });
    await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
    await handle.result();
    return { handle, ids: { transactionId: s.transactionId!, esignId: s.esignId! } };
  };
  /** Someone sends the withdrawn transaction again through the API, and everyone signs it. */
  const resendAndSign = async (transactionId: string) => {
    const record = await resendWithdrawn(esign, transactionId);
    for (const p of record.participants) await sandbox.controls.signAs(transactionId, p.id);
  };
  const activityDone = async (handle: Recorded, type: string, times = 1) => {
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = new Set(
      events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type).map((e) => String(e.eventId)),
    );
    return events.filter((e) => scheduled.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId))).length >= times;
  };
  const completedRun = async (workflowId: string, notRunId?: string) =>
    eventually(`a completed run of ${workflowId}`, async () => {
      const d = await temporal.workflow.getHandle(workflowId).describe();
      return d.status.name === 'COMPLETED' && d.runId !== notRunId && d.runId;
    });

  return {
    // The owner ended (cancelled); then the transaction completes: the bridge finds no running owner, and the inbox
    // the completion starts looks up the ended owner and starts the late completion at once.
    async 'inbox-owner-ended'() {
      const { ids } = await cancelled();
      await resendAndSign(ids.transactionId);
      await deliver(ids);
      const inbox = temporal.workflow.getHandle(inboxIdFor(ids.transactionId));
      await eventually('the late completion started', () => activityDone(inbox, 'startLateCompletion'));
      await completedRun(lateCompletionIdFor(ids.transactionId));
      return inbox;
    },
    // A completion the provider does not confirm, handed to the inbox by a bridge that could not read the record
    // either: the inbox finds no completed transaction to own, closes it as orphaned after its time and starts a late
    // completion, which finds the transaction not completed. Then the transaction is sent again and signed, and its
    // real completion (through the bridge) starts the inbox again, and the late completion again, which archives.
    async 'late-completion-retried'() {
      const { ids } = await cancelled();
      const inboxId = inboxIdFor(ids.transactionId);
      const lateId = lateCompletionIdFor(ids.transactionId);
      const unread: OwnerDirectory = { referenceOf: async () => null, statusOf: async () => null };
      await deliverNotification(temporal, completion(ids), { taskQueue, owners: unread, orphanAfter: '2 seconds' });
      const orphaned = await completedRun(inboxId);
      const notCompleted = await completedRun(lateId);
      await resendAndSign(ids.transactionId);
      await deliver(ids);
      const archived = await completedRun(lateId, notCompleted);
      return {
        '-inbox': temporal.workflow.getHandle(inboxId, orphaned),
        '-not-completed': temporal.workflow.getHandle(lateId, notCompleted),
        '': temporal.workflow.getHandle(lateId, archived),
      };
    },
    // A late completion whose ZIP is refused (the worker trusts another CA than the provider's): it waits in
    // archive_invalid and tells the integrator; an operator's retry before the cause is fixed is refused again; once
    // it is fixed, a retry archives (test/workflows/late-completion-refused.test.ts follows the same path).
    async 'late-completion-refused-then-retried'() {
      const evidence = ctx.deps.evidence!;
      const trusted = evidence.trust;
      const { ids } = await cancelled({ callbackUrl: ctx.callbackUrl });
      const late = temporal.workflow.getHandle<EsignLateCompletionWorkflow>(lateCompletionIdFor(ids.transactionId));
      const refused = (times: number) =>
        eventually(`the late completion refused ${times} time(s)`, async () => {
          const s = await late.query(lateCompletionStatusQuery).catch(() => undefined);
          return s?.phase === 'archive_invalid' && s.refusals === times;
        });
      const stranger = await createCertificateAuthority({ CN: 'Some other CA' });
      evidence.trust = trustAnchorsOnly(parseCertificates(stranger.certificate));
      try {
        await resendAndSign(ids.transactionId);
        await deliver(ids);
        await refused(1);
        await late.executeUpdate(lateRetryArchiveUpdate).catch(() => undefined);
        await refused(2);
      } finally {
        evidence.trust = trusted;
      }
      await late.executeUpdate(lateRetryArchiveUpdate);
      await late.result();
      return late;
    },
  };
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopServer?.().catch(() => undefined);
  process.exit(1);
});
