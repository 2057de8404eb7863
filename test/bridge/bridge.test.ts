import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBridge } from '../../src/bridge/index.js';
import { statusQuery, type EsignTransactionStatus } from '../../src/definitions/transaction.js';
import { inboxIdFor, type InboxResult } from '../../src/definitions/inbox.js';
import { newSecret, postWebhook, signedHeaders, startTestBridge } from '../support/bridge.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
let bridge: RunningBridge;
let secret: string;

beforeAll(async () => {
  env = await startEsignTestEnv();
  secret = env.sandbox.running.webhookSecret;
  // The old secret is still accepted during a rotation.
  bridge = await startTestBridge({
    address: inject('temporalAddress'),
    taskQueue: env.taskQueue,
    secrets: [newSecret(), secret],
    provider: provider(),
  });
  env.sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
});
afterAll(async () => {
  await bridge?.stop();
  await env?.close();
});

const provider = () => ({ url: env.sandbox.running.url, token: env.sandbox.token });

type Handle = Awaited<ReturnType<EsignTestEnv['start']>>['handle'];
async function awaiting(handle: Handle): Promise<EsignTransactionStatus> {
  let status: EsignTransactionStatus | undefined;
  await expect.poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
  return status!;
}

async function signalsReceived(handle: Handle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'esignCompleted').length;
}

describe('webhook bridge', () => {
  it('end to end: sandbox completion -> signed webhook -> bridge -> workflow archives', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' })); // no polling: only the webhook can finish it
    const status = await awaiting(handle);
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect((await handle.query(statusQuery)).lastReconciledAt).toBeNull();
    expect(await signalsReceived(handle)).toBe(1);
    const metrics = await (await fetch(`${bridge.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/esign_bridge_webhooks_total\{outcome="accepted"\} [1-9]/);
    expect(metrics).toContain('esign_bridge_signal_seconds_bucket');
  });

  it('rejects every unauthenticated or invalid request, and none of them signals', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await awaiting(handle);
    const body = JSON.stringify(completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
    const good = signedHeaders(secret, body);
    const cases: [string, string | Buffer, Record<string, string>, number][] = [
      ['no signature', body, { 'content-type': 'application/json' }, 401],
      ['wrong secret', body, signedHeaders(newSecret(), body), 401],
      ['tampered body', body.replace('esign-completed', 'esign-completed '), good, 401],
      ['stale timestamp (replay)', body, signedHeaders(secret, body, { at: new Date(Date.now() - 10 * 60_000) }), 401],
      ['future timestamp', body, signedHeaders(secret, body, { at: new Date(Date.now() + 10 * 60_000) }), 401],
      ['wrong content type', body, { ...good, 'content-type': 'text/plain' }, 415],
      ['oversized body', Buffer.alloc(70 * 1024, 32), { ...signedHeaders(secret, ' '.repeat(70 * 1024)) }, 413],
    ];
    for (const [name, payload, headers, expected] of cases) {
      const res = await postWebhook(bridge.url, payload, headers);
      expect({ name, status: res.status }).toEqual({ name, status: expected });
      expect(String(res.headers['content-type'])).toContain('application/problem+json');
      expect(res.text).not.toContain(secret);
    }
    const malformed = '{"event": "esign-completed",';
    expect((await postWebhook(bridge.url, malformed, signedHeaders(secret, malformed))).status).toBe(400);
    const invalid = JSON.stringify({
      event: 'esign-completed',
      entity: 'esign',
      data: { notificationId: 'nope', entity_id: status.esignId, transaction_id: status.transactionId },
    });
    const res = await postWebhook(bridge.url, invalid, signedHeaders(secret, invalid));
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.json)).toContain('/data/notificationId');
    const otherEvent = JSON.stringify({ event: 'esign-viewed', entity: 'esign', data: { transaction_id: status.transactionId } });
    expect((await postWebhook(bridge.url, otherEvent, signedHeaders(secret, otherEvent))).status).toBe(202);

    // Nothing reached the workflow: no signal in its history, and no inbox was started.
    expect(await signalsReceived(handle)).toBe(0);
    await expect(env.temporal.client.workflow.getHandle(inboxIdFor(status.transactionId!)).describe()).rejects.toThrow();
    await handle.executeUpdate('cancel', { args: [{}] });
  });

  it('gives 50 concurrent deliveries of one notification a single effect', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await awaiting(handle);
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    // Redeliver the provider's own notification (same notificationId) 50 times at once.
    const delivery = (await env.sandbox.deliveries(status.transactionId!)).find((d) => d.payload.includes('"esign-completed"'));
    const body = delivery!.payload;
    // Two bridges behind one "load balancer", as in production.
    const second = await startTestBridge({
      address: inject('temporalAddress'),
      taskQueue: env.taskQueue,
      secrets: [secret],
      provider: provider(),
    });
    try {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) => postWebhook(i % 2 ? second.url : bridge.url, body, signedHeaders(secret, body))),
      );
      expect(responses.every((r) => r.status === 200)).toBe(true);
    } finally {
      await second.stop();
    }
    expect((await handle.result()).status).toBe('completed');
    // 51 deliveries of one notification (the sandbox's and our 50): copies that race past each bridge's memory of
    // recent ids are signalled, and the workflow takes one (beside one esign-participant-signed per participant).
    expect((await handle.query(statusQuery)).notificationsAccepted).toBe(1 + status.participants.length);
    const signals = await signalsReceived(handle);
    expect(signals).toBeGreaterThanOrEqual(1);
    expect(signals).toBeLessThanOrEqual(51);
  });

  it('keeps a notification nobody owns, then closes it as orphaned', async () => {
    const orphanBridge = await startTestBridge({
      address: inject('temporalAddress'),
      taskQueue: env.taskQueue,
      secrets: [secret],
      orphanAfter: '2 seconds',
      provider: provider(),
    });
    try {
      const notification = completedWebhook({ transactionId: randomUUID(), esignId: randomUUID() });
      const body = JSON.stringify(notification);
      expect((await postWebhook(orphanBridge.url, body, signedHeaders(secret, body))).status).toBe(200);
      const inbox = env.temporal.client.workflow.getHandle(inboxIdFor(notification.data.transaction_id));
      const result = (await inbox.result()) as InboxResult;
      expect(result).toMatchObject({ status: 'orphaned', owner: null, orphaned: [notification] });
      const description = await inbox.describe();
      expect(description.typedSearchAttributes.get({ name: 'EsignStatus', type: 'KEYWORD' } as never)).toBe('orphaned');
    } finally {
      await orphanBridge.stop();
    }
  });

  it('never answers 5xx to generated bodies and headers while Temporal is up', async () => {
    const header = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 80 }), fc.constant('v1,AAAA'));
    const json = fc.oneof(
      fc.json({ maxDepth: 6 }),
      fc.string({ maxLength: 2000 }),
      fc
        .record({ event: fc.string(), entity: fc.string(), data: fc.dictionary(fc.string(), fc.jsonValue()) })
        .map((o) => JSON.stringify(o)),
      fc
        .record({ notificationId: fc.uuid(), entity_id: fc.uuid(), transaction_id: fc.string({ minLength: 1, maxLength: 64 }) })
        .map((data) => JSON.stringify({ event: 'esign-completed', entity: 'esign', data })),
    );
    await fc.assert(
      fc.asyncProperty(
        json,
        header,
        header,
        header,
        fc.boolean(),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', ''),
        async (body, id, ts, sig, sign, type) => {
          const headers: Record<string, string> = sign ? signedHeaders(secret, body) : {};
          if (!sign) {
            if (id !== undefined) headers['webhook-id'] = id.replace(/[^\x20-\x7e]/g, '');
            if (ts !== undefined) headers['webhook-timestamp'] = ts.replace(/[^\x20-\x7e]/g, '');
            if (sig !== undefined) headers['webhook-signature'] = sig.replace(/[^\x20-\x7e]/g, '');
          }
          if (type) headers['content-type'] = type;
          else delete headers['content-type'];
          const res = await postWebhook(bridge.url, body, headers);
          return res.status < 500;
        },
      ),
      { numRuns: 300, seed: 4242 },
    );
    expect((await fetch(`${bridge.url}/healthz`)).status).toBe(200);
  });
});
