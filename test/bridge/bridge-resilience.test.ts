import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../../tools/temporal/dev-server.js';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { TransactionRef } from '../../activities/transactions.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';
import { postWebhook, signedHeaders, startTestBridge } from '../support/bridge.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { startTestSandbox, uploadedRequest } from '../support/sandbox.js';
import { freePort } from '../support/temporal.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('webhook bridge resilience', () => {
  it('delivers a webhook that arrives before the workflow knows its provider ids, with no redelivery', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let created: (ref: TransactionRef) => void = () => undefined;
    const providerCreated = new Promise<TransactionRef>((resolve) => (created = resolve));
    const env: EsignTestEnv = await startEsignTestEnv({
      wrapActivities: (activities) => ({
        ...activities,
        async createTransaction(request) {
          const ref = await activities.createTransaction(request);
          created(ref);
          await held; // the create's response is "slow": the workflow does not yet know the provider's ids
          return ref;
        },
      }),
    });
    cleanups.push(() => env.close());
    const bridge = await startTestBridge({
      address: inject('temporalAddress'),
      taskQueue: env.taskQueue,
      secrets: [env.sandbox.running.webhookSecret],
      provider: { url: env.sandbox.running.url, token: env.sandbox.token },
    });
    cleanups.push(() => bridge.stop());
    env.sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);

    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const ref = await providerCreated;
    for (const p of (await env.sandbox.client.getTransaction(ref.transactionId)).participants) {
      await env.sandbox.control.signAs(ref.transactionId, p.id);
    }
    // The bridge found the owner by the provider's record and signalled it: the workflow holds the notifications
    // (the completion and each participant's signature) until it knows its ids. No inbox is involved.
    const signals = async () =>
      ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    await expect.poll(signals, { timeout: 20_000 }).toBe(1 + 2);
    expect((await handle.query(statusQuery)).phase).toBe('creating');
    await expect(env.temporal.client.workflow.getHandle(inboxIdFor(ref.transactionId)).describe()).rejects.toThrow();

    release();
    expect((await handle.result()).status).toBe('completed');
    // The sandbox records a 2xx once the bridge's response is back, which may be after the workflow finished.
    await expect
      .poll(async () => (await env.sandbox.deliveries(ref.transactionId)).every((d) => d.status === 'delivered'), { timeout: 10_000 })
      .toBe(true);
    const deliveries = await env.sandbox.deliveries(ref.transactionId);
    expect(deliveries.map((d) => ({ status: d.status, attempts: d.attempts }))).toEqual(
      deliveries.map(() => ({ status: 'delivered', attempts: 1 })),
    );
    expect(deliveries.some((d) => d.payload.includes('"esign-completed"'))).toBe(true);
  });

  it('answers 503 with Retry-After while Temporal is down, and the provider redelivers once it is back', async () => {
    const port = await freePort();
    const dbFilename = join(await mkdtemp(join(tmpdir(), 'temporal-restart-')), 'temporal.sqlite');
    const startServer = () => startDevServer({ cliPath: inject('temporalCliPath'), port, dbFilename });
    let temporal = await startServer();
    const sandbox = await startTestSandbox();
    cleanups.push(() => sandbox.close());
    const bridge = await startTestBridge({
      address: `127.0.0.1:${port}`,
      taskQueue: 'no-worker-needed',
      secrets: [sandbox.running.webhookSecret],
      provider: { url: sandbox.running.url, token: sandbox.token },
    });
    cleanups.push(() => bridge.stop());
    sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
    expect((await fetch(`${bridge.internalUrl}/readyz`)).status).toBe(200);

    await temporal.teardown();
    expect((await fetch(`${bridge.internalUrl}/readyz`)).status).toBe(503);
    const body = JSON.stringify(completedWebhook({ transactionId: crypto.randomUUID(), esignId: crypto.randomUUID() }));
    const refused = await postWebhook(bridge.url, body, signedHeaders(sandbox.running.webhookSecret, body));
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    const request = await uploadedRequest(sandbox.client);
    const created = await sandbox.client.createTransaction(request);
    await sandbox.control.signAs(created.id!, request.participants[0]!.id);
    await expect.poll(async () => (await sandbox.deliveries(created.id!))[0]?.lastError, { timeout: 20_000 }).toBe('HTTP 503');
    expect((await sandbox.deliveries(created.id!))[0]?.status).toBe('pending');

    temporal = await startServer();
    cleanups.push(() => temporal.teardown());
    // Every webhook (the participant's signature and the completion) is taken once Temporal is back.
    await expect
      .poll(async () => (await sandbox.deliveries(created.id!)).map((d) => d.status), { timeout: 60_000, interval: 250 })
      .toEqual(['delivered', 'delivered']);
    // The completion is durably in Temporal: no workflow owns the transaction, so its inbox holds it.
    const inbox = await temporal.client.workflow.getHandle(inboxIdFor(created.id!)).describe();
    expect(inbox.type).toBe('esignInbox');
  }, 120_000);
});
