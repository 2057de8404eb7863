// An integrator's event log that ended without a result (`temporal workflow terminate`, a failure, a timeout) is
// continued from its last state, like one closed after its retention (docs/integrator-events.md, "The event log"),
// against the real dev server, the sandbox over HTTP and a real receiver: the transaction's next event is numbered
// after the events the log held, which stay listed and redeliverable with their own webhook-ids. Its state is the
// closed run's query: where no worker answers it, or its history cannot be decoded, nothing is started that would
// number from 1 again; a worker on its queue reads it, with the events signalled to it that it had not taken. A run
// terminated before any worker took it ran none of the log's code (and the server refuses its query): its state is
// what it was given.
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventLogUnreadable, eventLogState, listEsignEvents, redeliverEsignEvents } from '../../src/client/event-log.js';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogAppendSignal, eventLogIdFor, type EventLogInput } from '../../src/definitions/event-log.js';
import type { IntegratorEvent } from '../../src/definitions/transaction.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { EventReceiver } from '../support/event-receiver.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { sandboxEvidencePolicy } from '../support/sandbox.js';
import { uniqueTaskQueue } from '../support/temporal.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;

describe('an event log an operator terminated', () => {
  let env: EsignTestEnv;
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await EventReceiver.start(secret);
    env = await startEsignTestEnv({
      deps: {
        callbackSecrets: [secret],
        allowedUrls: [receiver.server.url],
        callbackDelivery: { attempts: 20, firstDelayMs: 200, maxDelayMs: 500 },
      },
    });
  });
  afterAll(async () => {
    await env?.close();
    await receiver?.close();
  });

  const shown = async (referenceId: string) =>
    (await listEsignEvents(env.temporal.client, referenceId)).events.map((e) => `${e.sequence} ${e.type} ${e.state}`);

  it('is continued by the next event, numbered after what it held, which stays listed and redeliverable', async () => {
    const input = env.input({ reconcileInterval: '1 second', callbackUrl: receiver.url });
    const { referenceId } = input;
    const { handle } = await env.start(input);
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const [ada, alan] = status.participants;
    await env.sandbox.control.signAs(status.transactionId!, ada!.id);
    await expect.poll(() => shown(referenceId), { timeout: 30_000 }).toEqual(['1 participant.signed delivered']);
    const first = (await listEsignEvents(env.temporal.client, referenceId)).events[0]!;

    // The operator terminates the log mid-transaction: no result, but its last state is still readable (its query).
    await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).terminate('an operator ended it');
    expect(await shown(referenceId)).toEqual(['1 participant.signed delivered']);

    // The transaction's next events start it again from that state: 2 and 3, never a second 1.
    await env.sandbox.control.signAs(status.transactionId!, alan!.id);
    expect((await handle.result()).status).toBe('completed');
    await expect
      .poll(() => shown(referenceId), { timeout: 30_000 })
      .toEqual(['1 participant.signed delivered', '2 participant.signed delivered', '3 transaction.completed delivered']);
    const mine = () => receiver.events.filter((e) => e.data.referenceId === referenceId);
    expect(mine().map((e) => `${e.sequence} ${e.type}`)).toEqual([
      '1 participant.signed',
      '2 participant.signed',
      '3 transaction.completed',
    ]);
    expect(new Set(mine().map((e) => e.id)).size).toBe(3);
    expect(mine()[0]!.id).toBe(first.id);

    // What the log held before the terminate can still be sent again, with its own webhook-id.
    expect(await redeliverEsignEvents(env.temporal.client, referenceId, { after: 0 })).toEqual({ queued: 3, sequences: [1, 2, 3] });
    await expect
      .poll(async () => (await listEsignEvents(env.temporal.client, referenceId)).events.map((e) => `${e.sequence} ${e.attemptCount}`), {
        timeout: 30_000,
      })
      .toEqual(['1 2', '2 2', '3 2']);
    expect((await listEsignEvents(env.temporal.client, referenceId)).events[0]!.attempts.map((a) => a.status)).toEqual([204, 204]);

    // Terminated again, after signals, attempts and a redelivery: still read, all three events with their attempts.
    await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).terminate('an operator ended it again');
    expect(
      (await eventLogState(env.temporal.client, referenceId)).restart?.events.map(
        (e) => `${e.sequence} ${'state' in e ? e.attemptCount : '?'}`,
      ),
    ).toEqual(['1 2', '2 2', '3 2']);
  }, 120_000);

  /** An event of a provider transaction `tx`, as the transaction hands it over. */
  const event = (tx: string, type: IntegratorEvent['type'], sequence?: number): IntegratorEvent & { sequence?: number } => ({
    type,
    key: `${tx}:${type}`,
    occurredAt: new Date().toISOString(),
    data: { transactionId: tx },
    ...(sequence !== undefined ? { sequence } : {}),
  });

  /** A worker of its own on `taskQueue`, delivering to the receiver. */
  const workerOn = (taskQueue: string) =>
    createEsignWorker({
      connection: env.temporal.nativeConnection,
      namespace: env.temporal.namespace,
      taskQueue,
      deps: {
        client: env.sandbox.client,
        archive: new LocalArchiveStore(env.archiveDir),
        evidence: sandboxEvidencePolicy(env.sandbox),
        callbackSecrets: [secret],
        allowedUrls: [receiver.server.url],
      },
    });

  it('terminated where no worker answers its query: a typed error, and nothing is started over it', async () => {
    const referenceId = `ref-unpolled-${randomBytes(6).toString('hex')}`;
    const tx = `tx-${referenceId}`;
    const taskQueue = uniqueTaskQueue('gone');
    const start: EventLogInput = {
      referenceId,
      callbackUrl: receiver.url,
      events: [{ ...event(tx, 'participant.signed'), sequence: 1 }],
      retention: '2 days',
    };
    // The log runs on a queue whose only worker delivers its first event, then goes away.
    const handle = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
      workflowId: eventLogIdFor(referenceId),
      taskQueue,
      args: [start],
    });
    const gone = await workerOn(taskQueue);
    await gone.runUntil(expect.poll(() => shown(referenceId), { timeout: 30_000 }).toEqual(['1 participant.signed delivered']));
    // Handed over while no worker runs, then terminated: its last workflow task never took these.
    await handle.signal(eventLogAppendSignal, event(tx, 'reminder.due', 2));
    await handle.signal(eventLogAppendSignal, event(tx, 'participant.signed', 3)); // a repeated hand-over: taken once
    await handle.signal(eventLogAppendSignal, event(tx, 'transaction.completed', 3));
    await handle.terminate('an operator ended it');

    const refused = await eventLogState(env.temporal.client, referenceId, { queryTimeoutMs: 2_000 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EventLogUnreadable);
    // The query waits out its deadline, or the server, having seen no poller for a while, refuses it sooner: either
    // way the operator is told what to start.
    expect((refused as Error).message).toMatch(
      new RegExp(`no worker (answered its query within 2 s|polls its task queue .*): start a worker on ${taskQueue}$`),
    );
    // A backend listing or redelivering gets the same (after the default 10 s), and nothing is started over the run.
    await expect(listEsignEvents(env.temporal.client, referenceId)).rejects.toThrow(`start a worker on ${taskQueue}`);
    await expect(redeliverEsignEvents(env.temporal.client, referenceId, { after: 0 })).rejects.toBeInstanceOf(EventLogUnreadable);
    const latest = await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).describe();
    expect({ runId: latest.runId, status: latest.status.name }).toEqual({ runId: handle.firstExecutionRunId, status: 'TERMINATED' });

    // A worker on its queue again answers with the log's own view, with the events its last workflow task never took
    // (nothing in the client adds them: the worker takes them, as the log does, before it answers).
    const back = await workerOn(taskQueue);
    const state = await back.runUntil(eventLogState(env.temporal.client, referenceId));
    expect(state.running).toBe(false);
    expect(state.restart).toMatchObject({ referenceId, callbackUrl: receiver.url, retention: '2 days', ended: true });
    expect(state.restart!.events.map((e) => `${e.sequence} ${e.type} ${'state' in e ? `${e.state} ${e.attemptCount}` : '?'}`)).toEqual([
      '1 participant.signed delivered 1',
      '2 reminder.due pending 0',
      '3 transaction.completed pending 0',
    ]);
  }, 90_000);

  it('terminated before any worker took it: its state is what it was given, with no worker', async () => {
    const referenceId = `ref-unstarted-${randomBytes(6).toString('hex')}`;
    const tx = `tx-${referenceId}`;
    // No worker polls this queue: the run never started a workflow task, so ran none of the log's code (and the
    // server answers no query of it).
    const handle = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
      workflowId: eventLogIdFor(referenceId),
      taskQueue: uniqueTaskQueue('nobody'),
      args: [
        { referenceId, callbackUrl: receiver.url, events: [{ ...event(tx, 'participant.signed'), sequence: 1 }], retention: '2 days' },
      ],
    });
    await handle.signal(eventLogAppendSignal, event(tx, 'reminder.due', 2));
    await handle.signal(eventLogAppendSignal, event(tx, 'participant.signed', 3)); // a repeated hand-over: taken once
    await handle.signal(eventLogAppendSignal, event(tx, 'transaction.completed', 3));
    await handle.terminate('an operator ended it');

    const state = await eventLogState(env.temporal.client, referenceId, { queryTimeoutMs: 2_000 });
    expect(state.restart).toMatchObject({ referenceId, callbackUrl: receiver.url, retention: '2 days', ended: true });
    expect(state.restart!.events.map((e) => `${e.sequence} ${e.type} ${'state' in e ? e.state : '?'}`)).toEqual([
      '1 participant.signed pending',
      '2 reminder.due pending',
      '3 transaction.completed pending',
    ]);
  }, 60_000);

  it('whose state cannot be read at all is not started again from 1', async () => {
    const referenceId = `ref-unreadable-${randomBytes(6).toString('hex')}`;
    const tx = `tx-${referenceId}`;
    const handle = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
      workflowId: eventLogIdFor(referenceId),
      taskQueue: uniqueTaskQueue('nobody'),
      args: [{ referenceId, callbackUrl: receiver.url, events: [{ ...event(tx, 'participant.signed'), sequence: 1 }] }],
    });
    await handle.terminate('an operator ended it');
    // A client without the key its payloads were written with (a codec that cannot decode them).
    const keyless = new Client({
      connection: env.temporal.client.connection,
      namespace: env.temporal.namespace,
      dataConverter: {
        payloadCodecs: [
          {
            encode: async (p) => p,
            decode: async () => {
              throw new Error('no key for these payloads');
            },
          },
        ],
      },
    });
    const refused = await eventLogState(keyless, referenceId, { queryTimeoutMs: 2_000 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EventLogUnreadable);
    expect((refused as Error).message).toMatch(/no key for these payloads/);
    await expect(redeliverEsignEvents(keyless, referenceId, { after: 0 })).rejects.toBeInstanceOf(EventLogUnreadable);
    // Nothing was started over it.
    expect((await handle.describe()).status.name).toBe('TERMINATED');
  }, 60_000);
});
