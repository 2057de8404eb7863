import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TransactionRef } from '../activities/transactions.js';
import { esignCompletedSignal, statusQuery } from '../workflows/definitions.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';

// The create activity's completion is held back after the provider created the
// transaction, as when its response is slow: the webhook arrives first.
let release: () => void = () => undefined;
let createdAtProvider: (ref: TransactionRef) => void = () => undefined;
const held = new Promise<void>((resolve) => (release = resolve));
const providerCreated = new Promise<TransactionRef>((resolve) => (createdAtProvider = resolve));

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({
    wrapActivities: (activities) => ({
      ...activities,
      async createTransaction(request) {
        const ref = await activities.createTransaction(request);
        createdAtProvider(ref);
        await held;
        return ref;
      },
    }),
  });
});
afterAll(async () => {
  release();
  await env?.close();
});

it('keeps a completion signal that arrives before creation finished, and completes without polling', async () => {
  // Reconciliation far away: only the early signal can complete this in time.
  const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
  const ref = await providerCreated;
  for (const p of (await env.sandbox.client.getTransaction(ref.transactionId)).participants) {
    await env.sandbox.control.signAs(ref.transactionId, p.id);
  }
  await handle.signal(esignCompletedSignal, completedWebhook(ref));
  expect((await handle.query(statusQuery)).phase).toBe('creating');
  release();
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect((await handle.query(statusQuery)).lastReconciledAt).toBeNull();
});
