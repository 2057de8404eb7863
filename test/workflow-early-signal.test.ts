import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TransactionRef } from '../activities/transactions.js';
import { esignCompletedSignal, statusQuery } from '../src/definitions/transaction.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';

// The create activity's completion is held back after the provider created the
// transaction, as when its response is slow. No webhook can reach the workflow
// then (the inbox forwards only once the workflow registered, after creation),
// so a notification sent by hand in that window cannot be matched: it is
// refused and counted, and reconciliation finds the completion.
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

it('refuses a notification sent before creation finished, and completes by reconciliation', async () => {
  const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
  const ref = await providerCreated;
  for (const p of (await env.sandbox.client.getTransaction(ref.transactionId)).participants) {
    await env.sandbox.control.signAs(ref.transactionId, p.id);
  }
  await handle.signal(esignCompletedSignal, completedWebhook(ref));
  const before = await handle.query(statusQuery);
  expect(before.phase).toBe('creating');
  expect(before.notificationsRejected).toBe(1);
  release();
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const after = await handle.query(statusQuery);
  expect(after.notificationsAccepted).toBe(0);
  expect(after.lastReconciledAt).not.toBeNull();
});
