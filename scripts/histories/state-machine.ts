// The transaction workflow's paths that the state machine's fixes opened
// (issue 23), recorded by scripts/regenerate-histories.ts: each on a worker
// of its own, whose activities a scenario can hold back or whose trust
// anchors it can get wrong, on the server and sandbox main() started.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { ActivityDeps } from '../../activities/index.js';
import { listEsignEvents, redeliverEsignEvents } from '../../src/client/event-log.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { eventLogIdFor } from '../../src/definitions/event-log.js';
import { cancelUpdate, replaceTransactionUpdate, retryArchiveUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { createCertificateAuthority, parseCertificates } from '../../src/evidence/pki.js';
import type { RunningSandbox } from '../../packages/sandbox/src/index.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { createEsignWorker, type EsignWorkerOptions } from '../../src/worker/create-worker.js';
import { eventually } from '../../test/support/eventually.js';
import { gate } from '../../test/support/gate.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

export interface ScenarioContext {
  temporal: Client;
  connection: NativeConnection;
  sandbox: RunningSandbox;
  taskQueue: string;
  /** main()'s worker's dependencies. */
  deps: ActivityDeps;
  input(overrides?: Partial<EsignTransactionInput>): EsignTransactionInput;
  callbackUrl: string;
}

type Recorded = Pick<WorkflowHandle, 'fetchHistory'>;

export function stateMachineScenarios(ctx: ScenarioContext): Record<string, () => Promise<Recorded | Record<string, Recorded>>> {
  const { temporal, sandbox } = ctx;
  let queues = 0;
  /** Runs `body` with a worker of its own (its queue, its deps, its wrapped activities). */
  const onWorker = async <T>(
    options: { deps?: Partial<ActivityDeps>; wrapActivities?: EsignWorkerOptions['wrapActivities'] },
    body: (taskQueue: string) => Promise<T>,
  ): Promise<T> => {
    const taskQueue = `${ctx.taskQueue}-sm-${++queues}`;
    const worker = await createEsignWorker({
      connection: ctx.connection,
      taskQueue,
      deps: { ...ctx.deps, ...options.deps },
      ...(options.wrapActivities ? { wrapActivities: options.wrapActivities } : {}),
    });
    return worker.runUntil(body(taskQueue));
  };
  const phaseOf = async (handle: WorkflowHandle, phase: string) => (await handle.query(statusQuery)).phase === phase;

  return {
    // The ZIP is refused (the worker trusts another CA): the run waits in archive_invalid; a retry on that worker
    // is refused again; a worker with the right trust anchor archives it on the next retry.
    async 'archive-refused-then-retried'() {
      const stranger = await createCertificateAuthority({ CN: 'Another CA' });
      const untrusted = {
        signatures: 'require',
        trust: trustAnchorsOnly(parseCertificates(stranger.certificate)),
        requireCompletionCertificate: true,
      } as const;
      const taskQueue = `${ctx.taskQueue}-sm-archive`;
      const wrong = await createEsignWorker({ connection: ctx.connection, taskQueue, deps: { ...ctx.deps, evidence: untrusted } });
      const handle = await wrong.runUntil(async () => {
        const { handle } = await startEsignTransaction(temporal, ctx.input({ reconcileInterval: '1 second' }), { taskQueue });
        await eventually('awaiting signatures', () => phaseOf(handle, 'awaiting_signatures'));
        const s = await handle.query(statusQuery);
        for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
        await eventually('archive refused', () => phaseOf(handle, 'archive_invalid'));
        await handle.executeUpdate(retryArchiveUpdate).catch(() => undefined); // refused again, same cause
        return handle;
      });
      // The operator deploys the right trust anchor: a worker with it on the same queue.
      const fixed = await createEsignWorker({ connection: ctx.connection, taskQueue, deps: ctx.deps });
      return fixed.runUntil(async () => {
        await handle.executeUpdate(retryArchiveUpdate);
        await handle.result();
        return handle;
      });
    },

    // The integrator's endpoint is down: the transaction completes and its run ends; the event log tries each event
    // to its budget and marks it failed; the endpoint comes back and a redelivery sends them all.
    async 'event-log-failed-then-redelivered'() {
      let up = false;
      const endpoint = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(up ? 204 : 503).end());
      });
      await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
      const callbackUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/events`;
      try {
        return await onWorker(
          {
            deps: {
              allowedUrls: [...(ctx.deps.allowedUrls ?? []), new URL(callbackUrl).origin],
              callbackDelivery: { attempts: 2, firstDelayMs: 100, maxDelayMs: 100 },
            },
          },
          async (taskQueue) => {
            const input = ctx.input({ reconcileInterval: '1 second', callbackUrl });
            const { handle } = await startEsignTransaction(temporal, input, { taskQueue });
            await eventually('awaiting signatures', () => phaseOf(handle, 'awaiting_signatures'));
            const s = await handle.query(statusQuery);
            for (const p of s.participants) await sandbox.controls.signAs(s.transactionId!, p.id);
            await handle.result();
            const states = async () => (await listEsignEvents(temporal, input.referenceId)).events.map((e) => e.state);
            await eventually('every event failed', async () => (await states()).every((x) => x === 'failed'));
            up = true;
            await redeliverEsignEvents(temporal, input.referenceId, { after: 0 });
            await eventually('every event delivered', async () => (await states()).every((x) => x === 'delivered'));
            return temporal.workflow.getHandle(eventLogIdFor(input.referenceId));
          },
        );
      } finally {
        endpoint.close();
      }
    },

    // A referenceId used again once its first transaction ended: the ended log waits out its retention until the
    // later transaction's first event opens it again; it then waits for that transaction's end, with no retention.
    async 'event-log-reopened'() {
      const endpoint = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(204).end());
      });
      await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
      const callbackUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/events`;
      try {
        return await onWorker(
          { deps: { allowedUrls: [...(ctx.deps.allowedUrls ?? []), new URL(callbackUrl).origin] } },
          async (taskQueue) => {
            const base = ctx.input({ reconcileInterval: '1 second', callbackUrl });
            // Two signers: the later transaction's first signature is an event of a transaction still running.
            const second = { ...base.participants[0]!, email: 'second@example.com', firstName: 'Sue' };
            const input = { ...base, participants: [...base.participants, second] };
            const view = () => listEsignEvents(temporal, input.referenceId);
            for (const [n, signFirstOnly] of [
              [1, false],
              [2, true],
            ] as const) {
              const { handle } = await startEsignTransaction(temporal, input, { taskQueue });
              await eventually('awaiting signatures', () => phaseOf(handle, 'awaiting_signatures'));
              const s = await handle.query(statusQuery);
              const [first, ...rest] = s.participants;
              await sandbox.controls.signAs(s.transactionId!, first!.id);
              if (signFirstOnly) {
                await eventually('the later transaction opened the log', async () => (await view()).events.length === 4);
                if ((await view()).ended) throw new Error('the log says ended while a transaction it names runs');
              }
              for (const p of rest) await sandbox.controls.signAs(s.transactionId!, p.id);
              await handle.result();
              await eventually(`transaction ${n}'s events delivered`, async () => {
                const v = await view();
                return v.ended && v.events.every((e) => e.state === 'delivered');
              });
            }
            return temporal.workflow.getHandle(eventLogIdFor(input.referenceId));
          },
        );
      } finally {
        endpoint.close();
      }
    },

    // A replace in flight when a cancel comes: the withdraw waits for it, then takes the transaction back.
    async 'replace-then-cancel'() {
      const replace = gate();
      return onWorker(
        {
          wrapActivities: (a) => ({
            ...a,
            async updateTransaction(input) {
              replace.arrive();
              await replace.wait;
              return a.updateTransaction(input);
            },
          }),
        },
        async (taskQueue) => {
          const { handle } = await startEsignTransaction(temporal, ctx.input({ status: 'draft', referenceId: `replay-${randomUUID()}` }), {
            taskQueue,
          });
          await eventually('a draft', () => phaseOf(handle, 'draft'));
          const sent = handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] });
          await replace.reached;
          const cancelled = handle.executeUpdate(cancelUpdate, { args: [{ reason: 'replay scenario' }] });
          await new Promise((r) => setTimeout(r, 1_000));
          replace.open();
          await Promise.all([sent, cancelled]);
          await handle.result();
          return handle;
        },
      );
    },
  };
}
