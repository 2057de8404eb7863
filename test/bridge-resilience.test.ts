import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../src/temporal/dev-server.js';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { TransactionRef } from '../activities/transactions.js';
import { statusQuery } from '../src/definitions/transaction.js';
import { inboxIdFor, inboxStatusQuery } from '../src/definitions/inbox.js';
import { postWebhook, signedHeaders, startTestBridge } from './support/bridge.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';
import { startTestSandbox, uploadedRequest } from './support/sandbox.js';
import { freePort } from './support/temporal.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('webhook bridge resilience', () => {
  it('delivers a webhook that arrives before the workflow registered its provider ids, with no redelivery', async () => {
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
          await held; // the create's response is "slow": registration with the inbox waits
          return ref;
        },
      }),
    });
    cleanups.push(() => env.close());
    const bridge = await startTestBridge({
      address: inject('temporalAddress'),
      taskQueue: env.taskQueue,
      secrets: [env.sandbox.running.webhookSecret],
    });
    cleanups.push(() => bridge.stop());
    env.sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);

    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const ref = await providerCreated;
    for (const p of (await env.sandbox.client.getTransaction(ref.transactionId)).participants) {
      await env.sandbox.control.signAs(ref.transactionId, p.id);
    }
    const inbox = env.temporal.client.workflow.getHandle(inboxIdFor(ref.transactionId));
    await expect
      .poll(() => inbox.query(inboxStatusQuery).catch(() => undefined), { timeout: 20_000 })
      .toMatchObject({ owner: null, pending: 1 + 2 }); // the completion and each participant's signature
    expect((await handle.query(statusQuery)).phase).toBe('creating');

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
    });
    cleanups.push(() => bridge.stop());
    sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
    expect((await fetch(`${bridge.url}/readyz`)).status).toBe(200);

    await temporal.teardown();
    expect((await fetch(`${bridge.url}/readyz`)).status).toBe(503);
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
    await expect.poll(async () => (await sandbox.deliveries(created.id!))[0]?.status, { timeout: 60_000, interval: 250 }).toBe('delivered');
    // The notification is durably in Temporal: its inbox exists, holding it for the transaction workflow.
    const inbox = await temporal.client.workflow.getHandle(inboxIdFor(created.id!)).describe();
    expect(inbox.type).toBe('esignInbox');
  }, 120_000);
});
