// An integrator's event log that ended without a result (`temporal workflow terminate`, a failure, a timeout) is
// continued from its last state, like one closed after its retention (docs/integrator-events.md, "The event log"),
// against the real dev server, the sandbox over HTTP and a real receiver: the transaction's next event is numbered
// after the events the log held, which stay listed and redeliverable with their own webhook-ids. Where the closed run
// cannot answer its query (no worker polls its task queue), its state is read from its history; where neither can be
// read, nothing is started that would number from 1 again.
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventLogUnreadable, eventLogState, listEsignEvents, redeliverEsignEvents } from '../src/client/event-log.js';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogAppendSignal, eventLogIdFor, type EventLogInput } from '../src/definitions/event-log.js';
import type { IntegratorEvent } from '../src/definitions/transaction.js';
import { EventReceiver } from './support/event-receiver.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from './support/esign-env.js';
import { uniqueTaskQueue } from './support/temporal.js';

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

    // The operator terminates the log mid-transaction: no result, but its last state is still readable, from its
    // query and, where no worker answers that, from its history alike.
    await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).terminate('an operator ended it');
    expect(await shown(referenceId)).toEqual(['1 participant.signed delivered']);
    await expectSameFromHistory(referenceId);

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

    // Terminated again, after signals, attempts and a redelivery: its history tells the same as its query.
    await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).terminate('an operator ended it again');
    await expectSameFromHistory(referenceId);
    expect((await eventLogState(env.temporal.client, referenceId)).restart?.events).toHaveLength(3);
  }, 120_000);

  /** A closed log's state read from its history (a client whose queries no worker answers) is the one its query gives. */
  async function expectSameFromHistory(referenceId: string): Promise<void> {
    const queryless = new Client({
      connection: env.temporal.client.connection,
      namespace: env.temporal.namespace,
      interceptors: {
        workflow: [
          {
            query: () => Promise.reject(new Error('no worker answers')),
          },
        ],
      },
    });
    const fromQuery = await listEsignEvents(env.temporal.client, referenceId);
    expect(await listEsignEvents(queryless, referenceId)).toEqual(fromQuery);
    expect((await eventLogState(queryless, referenceId)).restart).toEqual((await eventLogState(env.temporal.client, referenceId)).restart);
  }

  /** An event of a provider transaction `tx`, as the transaction hands it over. */
  const event = (tx: string, type: IntegratorEvent['type'], sequence?: number): IntegratorEvent & { sequence?: number } => ({
    type,
    key: `${tx}:${type}`,
    occurredAt: new Date().toISOString(),
    data: { transactionId: tx },
    ...(sequence !== undefined ? { sequence } : {}),
  });

  it('terminated where no worker answers its query: its state is read from its history, signals included', async () => {
    const referenceId = `ref-unpolled-${randomBytes(6).toString('hex')}`;
    const tx = `tx-${referenceId}`;
    const start: EventLogInput = {
      referenceId,
      callbackUrl: receiver.url,
      events: [{ ...event(tx, 'participant.signed'), sequence: 1 }],
      retention: '2 days',
    };
    // No worker polls this queue: the run never had a workflow task, so only its history knows its events.
    const handle = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
      workflowId: eventLogIdFor(referenceId),
      taskQueue: uniqueTaskQueue('nobody'),
      args: [start],
    });
    await handle.signal(eventLogAppendSignal, event(tx, 'reminder.due', 2));
    await handle.signal(eventLogAppendSignal, event(tx, 'participant.signed', 3)); // a repeated hand-over: taken once
    await handle.signal(eventLogAppendSignal, event(tx, 'transaction.completed', 3));
    await handle.terminate('an operator ended it');

    const state = await eventLogState(env.temporal.client, referenceId, { queryTimeoutMs: 2_000 });
    expect(state.running).toBe(false);
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
