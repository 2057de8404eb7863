// The integrator's event log (docs/integrator-events.md, "The event log") against the real dev server, the sandbox
// over HTTP and a real receiver that verifies every request: events are numbered per transaction and delivered in
// that order; every attempt is kept; the transaction's run closes with its outcome while events are still pending,
// and they are delivered afterwards; an event given up is marked failed, the endpoint shows as failing, and a
// redelivery sends it again with the same webhook-id, also after the log closed; a worker killed mid-delivery
// loses nothing.
//
// The three suites run side by side, each with its own worker, sandbox and receiver: most of their time is waiting (on
// delivery backoffs, on a killed worker's delivery timing out). The tests of a suite run one after the other, as they
// take its one receiver down and up. Side by side, a delivery comes later than alone: each wait for one allows as
// long as the file's other waits.
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import type { CallbackDelivery } from '../../activities/completion.js';
import { listEsignEvents, NoEventLog, redeliverEsignEvents } from '../../src/client/event-log.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogIdFor, type EventLogResult } from '../../src/definitions/event-log.js';
import { launch, type Launched } from '../../tools/support/launch.js';
import { EventReceiver } from '../support/event-receiver.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { samplePdfFiles } from '../support/sandbox.js';
import { uniqueTaskQueue } from '../support/temporal.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;

async function signAll(env: EsignTestEnv, handle: Awaited<ReturnType<EsignTestEnv['start']>>['handle']) {
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  return status;
}

const healthOf = async (env: EsignTestEnv, referenceId: string) =>
  (await env.temporal.client.workflow.getHandle(eventLogIdFor(referenceId)).describe()).typedSearchAttributes
    .getAll()
    .find((p) => p.key.name === 'EsignCallbackHealth')?.value;

/** A receiver, and a worker that sends it events with this budget. */
/** A transaction with a callbackUrl, signed to the end while its endpoint answers 503. */
async function signedWhileDown(env: EsignTestEnv, receiver: EventReceiver) {
  const input = env.input({ reconcileInterval: '1 second', callbackUrl: receiver.url });
  const { handle } = await env.start(input);
  receiver.down = true;
  await signAll(env, handle);
  return { referenceId: input.referenceId, handle };
}

/** A test environment and an event receiver for the describe block that calls this, delivering as given. */
function useReceiver(callbackDelivery: CallbackDelivery): { env: EsignTestEnv; receiver: EventReceiver } {
  const held = {} as { env: EsignTestEnv; receiver: EventReceiver };
  beforeAll(async () => {
    held.receiver = await EventReceiver.start(secret);
    held.env = await startEsignTestEnv({
      deps: { callbackSecrets: [secret], allowedUrls: [held.receiver.server.url], callbackDelivery },
    });
  });
  afterAll(async () => {
    await held.env?.close();
    await held.receiver?.close();
  });
  return held;
}

describe.concurrent('an endpoint that is down for a while', () => {
  const held = useReceiver({ attempts: 40, firstDelayMs: 200, maxDelayMs: 500 });

  it(
    'the run closes with its outcome; the log delivers every event afterwards, in order, each attempt kept',
    { concurrent: false, timeout: 120_000 },
    async ({ expect }) => {
      const { env, receiver } = held;
      const { referenceId, handle } = await signedWhileDown(env, receiver);
      // The outcome is set and the run is over while not one event has reached the endpoint.
      expect((await handle.result()).status).toBe('completed');
      expect(receiver.events).toEqual([]);
      const waiting = await listEsignEvents(env.temporal.client, referenceId);
      expect(waiting.events.map((e) => [e.sequence, e.type])).toEqual([
        [1, 'participant.signed'],
        [2, 'participant.signed'],
        [3, 'transaction.completed'],
      ]);
      expect(waiting.ended).toBe(true);
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, referenceId)).events[0]!.attemptCount, { timeout: 20_000 })
        .toBeGreaterThan(1);

      receiver.down = false;
      await expect
        .poll(() => receiver.events.map((e) => `${e.sequence} ${e.type}`), { timeout: 30_000 })
        .toEqual(['1 participant.signed', '2 participant.signed', '3 transaction.completed']);
      const delivered = await listEsignEvents(env.temporal.client, referenceId);
      expect(delivered.events.every((e) => e.state === 'delivered')).toBe(true);
      // Every attempt: 503s while down, then the 204; the webhook-id the receiver saw is the log's.
      const first = delivered.events[0]!;
      expect(first.attempts.at(-1)).toMatchObject({ status: 204 });
      expect(first.attempts.slice(0, -1).every((a) => a.status === 503)).toBe(true);
      expect(delivered.events.map((e) => e.id)).toEqual(receiver.events.map((e) => e.id));
      expect(await listEsignEvents(env.temporal.client, referenceId, { after: 2 })).toMatchObject({ events: [{ sequence: 3 }] });
      expect(await healthOf(env, referenceId)).toBe('ok');
    },
  );

  it(
    "a referenceId used again by a later transaction continues the same log, numbered after the first one's events",
    { concurrent: false, timeout: 120_000 },
    async ({ expect }) => {
      const { env, receiver } = held;
      const input = env.input({ reconcileInterval: '1 second', callbackUrl: receiver.url });
      const first = await env.start(input);
      await signAll(env, first.handle);
      await first.handle.result();
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, input.referenceId)).events.length, { timeout: 20_000 })
        .toBe(3);
      await expect.poll(async () => (await listEsignEvents(env.temporal.client, input.referenceId)).ended, { timeout: 20_000 }).toBe(true);
      // The first transaction has ended: the reference may name a new one. Its first event opens the log again, so
      // the log waits for that transaction's end, not for the first one's retention.
      const again = await env.start(input);
      const status = await waitForPhase(again.handle, 'awaiting_signatures');
      const [firstSigner, ...others] = status.participants;
      await env.sandbox.control.signAs(status.transactionId!, firstSigner!.id);
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, input.referenceId)).events.length, { timeout: 20_000 })
        .toBe(4);
      expect((await listEsignEvents(env.temporal.client, input.referenceId)).ended).toBe(false);
      for (const p of others) await env.sandbox.control.signAs(status.transactionId!, p.id);
      await again.handle.result();
      await expect.poll(async () => (await listEsignEvents(env.temporal.client, input.referenceId)).ended, { timeout: 20_000 }).toBe(true);
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, input.referenceId)).events.map((e) => `${e.sequence} ${e.state}`), {
          timeout: 20_000,
        })
        .toEqual(['1 delivered', '2 delivered', '3 delivered', '4 delivered', '5 delivered', '6 delivered']);
      const mine = receiver.events.filter((e) => e.data.referenceId === input.referenceId);
      expect(mine.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(new Set(mine.map((e) => e.data.transactionId)).size).toBe(2);
    },
  );

  it(
    "a referenceId used again after its log closed numbers on from the closed log's events, which stay redeliverable",
    { concurrent: false, timeout: 120_000 },
    async ({ expect }) => {
      const { env, receiver } = held;
      const input = env.input({ reconcileInterval: '1 second', callbackUrl: receiver.url });
      const { referenceId } = input;
      // The log of an earlier transaction with this referenceId, delivered and closed after its retention.
      const earlier = {
        type: 'transaction.cancelled' as const,
        key: `earlier-${referenceId}:transaction.cancelled`,
        occurredAt: new Date().toISOString(),
        data: { referenceId, transactionId: `earlier-${referenceId}` },
      };
      const closed = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
        workflowId: eventLogIdFor(referenceId),
        taskQueue: env.taskQueue,
        args: [{ referenceId, callbackUrl: receiver.url, events: [{ ...earlier, sequence: 1 }], ended: true, retention: '1 second' }],
      });
      expect(((await closed.result()) as EventLogResult).events).toMatchObject([{ sequence: 1, state: 'delivered' }]);

      const { handle } = await env.start(input);
      await signAll(env, handle);
      expect((await handle.result()).status).toBe('completed');
      await expect
        .poll(
          async () => (await listEsignEvents(env.temporal.client, referenceId)).events.map((e) => `${e.sequence} ${e.type} ${e.state}`),
          {
            timeout: 30_000,
          },
        )
        .toEqual([
          '1 transaction.cancelled delivered',
          '2 participant.signed delivered',
          '3 participant.signed delivered',
          '4 transaction.completed delivered',
        ]);
      const mine = receiver.events.filter((e) => e.data.referenceId === referenceId);
      expect(mine.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      // The earlier transaction's event is still the log's: an operator can send it again.
      expect(await redeliverEsignEvents(env.temporal.client, referenceId, { after: 0 })).toMatchObject({ queued: 4 });
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, referenceId)).events.map((e) => `${e.sequence} ${e.attemptCount}`), {
          timeout: 30_000,
        })
        .toEqual(['1 2', '2 2', '3 2', '4 2']);
    },
  );

  it('a transaction without a callbackUrl has no log, and says so', { concurrent: false }, async ({ expect }) => {
    const { env } = held;
    await expect(listEsignEvents(env.temporal.client, `no-such-${Date.now()}`)).rejects.toBeInstanceOf(NoEventLog);
  });
});

describe.concurrent('an endpoint that never answers within the budget', () => {
  const held = useReceiver({ attempts: 2, firstDelayMs: 100, maxDelayMs: 100 });

  it(
    'marks the event failed and the endpoint failing; a redelivery sends it again, same webhook-id, in order',
    { concurrent: false, timeout: 120_000 },
    async ({ expect }) => {
      const { env, receiver } = held;
      const { referenceId, handle } = await signedWhileDown(env, receiver);
      await handle.result();
      await expect
        .poll(async () => (await listEsignEvents(env.temporal.client, referenceId)).events.map((e) => e.state), { timeout: 30_000 })
        .toEqual(['failed', 'failed', 'failed']);
      const failed = await listEsignEvents(env.temporal.client, referenceId);
      expect(failed.health).toBe('failing');
      expect(failed.events[0]).toMatchObject({ attemptCount: 2, failure: 'no answer but HTTP 503 after 2 attempts' });
      await expect.poll(() => healthOf(env, referenceId), { timeout: 10_000 }).toBe('failing');
      // Operators find it by the search attribute.
      await expect
        .poll(
          async () =>
            (await env.temporal.client.workflow.count(`EsignCallbackHealth = "failing" AND EsignReferenceId = "${referenceId}"`)).count,
          { timeout: 20_000 },
        )
        .toBe(1);

      receiver.down = false;
      // One event by its webhook-id, then everything after the first.
      const second = failed.events[1]!;
      expect(await redeliverEsignEvents(env.temporal.client, referenceId, { eventId: second.id })).toEqual({ queued: 1, sequences: [2] });
      await expect.poll(() => receiver.events.map((e) => e.sequence), { timeout: 20_000 }).toEqual([2]);
      expect(receiver.events[0]!.id).toBe(second.id);
      expect(await redeliverEsignEvents(env.temporal.client, referenceId, { after: 0 })).toEqual({ queued: 3, sequences: [1, 2, 3] });
      // The receiver deduplicates by webhook-id: event 2 again is the same event, so it sees 1 and 3 as new.
      await expect.poll(() => receiver.events.map((e) => e.sequence), { timeout: 20_000 }).toEqual([2, 1, 3]);
      await expect.poll(() => healthOf(env, referenceId), { timeout: 20_000 }).toBe('ok');
      // A redelivery that names nothing in the log is refused, saying why.
      await expect(redeliverEsignEvents(env.temporal.client, referenceId, { eventId: 'evt_nope' })).rejects.toThrow();
    },
  );

  it(
    'after its retention the log closes with its view; a redelivery starts it again from that view',
    { concurrent: false, timeout: 60_000 },
    async ({ expect }) => {
      const { env, receiver } = held;
      const referenceId = `closed-log-${Date.now()}`;
      const event = {
        type: 'transaction.completed' as const,
        key: `${referenceId}:transaction.completed`,
        occurredAt: new Date().toISOString(),
        data: { referenceId },
      };
      const handle = await env.temporal.client.workflow.start(EVENT_LOG_WORKFLOW_TYPE, {
        workflowId: eventLogIdFor(referenceId),
        taskQueue: env.taskQueue,
        args: [{ referenceId, callbackUrl: receiver.url, events: [{ ...event, sequence: 1 }], ended: true, retention: '1 second' }],
      });
      const closed = (await handle.result()) as EventLogResult;
      expect(closed.events).toMatchObject([{ sequence: 1, state: 'delivered' }]);
      const before = receiver.attempts;
      expect(await redeliverEsignEvents(env.temporal.client, referenceId, { after: 0 })).toEqual({ queued: 1, sequences: [1] });
      await expect.poll(() => receiver.attempts, { timeout: 20_000 }).toBe(before + 1);
      expect((await listEsignEvents(env.temporal.client, referenceId)).events[0]!.attemptCount).toBe(2);
    },
  );
});

describe.concurrent('a worker killed in the middle of a delivery', () => {
  const children: Launched[] = [];
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill()));
  });

  it('loses nothing: the next worker goes on, in order, and the receiver sees each event once', async ({ expect }) => {
    const receiver = await EventReceiver.start(secret);
    const env = await startEsignTestEnv({ deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] } });
    try {
      const [pdf] = await samplePdfFiles(['Killed mid-delivery']);
      const taskQueue = uniqueTaskQueue('event-kill');
      const child = async (extra: Record<string, string> = {}) => {
        const c = await launch(fileURLToPath(new URL('../support/worker-child.ts', import.meta.url)), {
          env: {
            TEMPORAL_ADDRESS: inject('temporalAddress'),
            PROVIDER_URL: env.sandbox.running.url,
            PROVIDER_TOKEN: env.sandbox.token,
            TASK_QUEUE: taskQueue,
            ARCHIVE_DIR: `${dirname(pdf!)}/archive`,
            DOCUMENT_ROOT: dirname(pdf!),
            CALLBACK_SECRET: secret,
            ALLOWED_URLS: receiver.server.url,
            ...extra,
          },
          ready: /worker-ready/,
        });
        children.push(c);
        return c;
      };
      // Killed right after event 2 reached the endpoint, before the activity could report it.
      const first = await child({ CRASH_IN_DELIVERY: '2' });
      const referenceId = `event-kill-${Date.now()}`;
      const { handle } = await startEsignTransaction(
        env.temporal.client,
        {
          referenceId,
          reconcileInterval: '1 second',
          callbackUrl: receiver.url,
          documents: [
            {
              title: 'Killed mid-delivery',
              source: { path: pdf! },
              tags: [
                { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 },
                { type: 'SIGNATURETEMPLATE', x: 320, y: 120, width: 200, height: 30, page: 0, signerIndex: 1 },
              ],
            },
          ],
          participants: [
            { email: 'a@example.com', firstName: 'Ann', lastName: 'One', authenticationType: 'none', twoFactorContact: 'email' },
            { email: 'b@example.com', firstName: 'Bob', lastName: 'Two', authenticationType: 'none', twoFactorContact: 'email' },
          ],
        },
        { taskQueue },
      );
      const status = await waitForPhase(handle, 'awaiting_signatures');
      for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
      expect(await first.exited).toBe('SIGKILL');
      await child();
      expect((await handle.result()).status).toBe('completed');
      // Event 2 went out twice on the wire (before and after the kill), once in effect; 3 only after it.
      await expect
        .poll(() => receiver.events.map((e) => `${e.sequence} ${e.type}`), { timeout: 90_000 })
        .toEqual(['1 participant.signed', '2 participant.signed', '3 transaction.completed']);
      expect(receiver.attempts).toBe(4);
      const log = await listEsignEvents(env.temporal.client, referenceId);
      expect(log.events.map((e) => e.state)).toEqual(['delivered', 'delivered', 'delivered']);
    } finally {
      await env.close();
      await receiver.close();
    }
  }, 180_000);
});
