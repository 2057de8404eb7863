import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TransactionRef } from '../../activities/transactions.js';
import { randomUUID } from 'node:crypto';
import { esignCompletedSignal, esignEventSignal, statusQuery } from '../../src/definitions/transaction.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

// The create activity's completion is held back after the provider created the
// transaction, as when its response is slow. The bridge routes webhooks by the
// referenceId, known from the start, so a notification can reach the workflow
// in that window: it is held, matched once the ids are known, and the
// workflow completes by it, with no reconciliation poll. One naming another
// transaction is refused then.
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

it('holds a notification sent before creation finished, and completes by it once the ids are known', async () => {
  const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
  const ref = await providerCreated;
  for (const p of (await env.sandbox.client.getTransaction(ref.transactionId)).participants) {
    await env.sandbox.control.signAs(ref.transactionId, p.id);
  }
  await handle.signal(esignCompletedSignal, completedWebhook(ref));
  // Another transaction's (not a completion): held too, refused once the ids are known.
  await handle.signal(esignEventSignal, {
    ...completedWebhook({ transactionId: randomUUID(), esignId: randomUUID() }),
    event: 'esign-declined',
  });
  const before = await handle.query(statusQuery);
  expect(before).toMatchObject({ phase: 'creating', notificationsAccepted: 0, notificationsRejected: 0 });
  release();
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const after = await handle.query(statusQuery);
  expect(after).toMatchObject({ notificationsAccepted: 1, notificationsRejected: 1, lastReconciledAt: null });
});
