// removeSigner of the last other signer while the workflow has not heard of a signature: accepted, the provider holds
// a transaction with nothing left to sign.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { correctEsignTransaction } from '../../src/client/transactions.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({ bridge: true });
}, 60_000);
afterAll(async () => {
  await env?.close();
});

it('stale removeSigner', async () => {
  const input = env.input({ signingDeadline: '20 seconds' });
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  const [ada, alan] = status.participants.map((p) => p.id) as [string, string];
  await env.sandbox.control.setFaults({ dropWebhookRate: 1 });
  await env.sandbox.control.signAs(status.transactionId!, ada);
  const r = await correctEsignTransaction(env.temporal.client, input.referenceId, { kind: 'removeSigner', by: 'ops', participantId: alan }).then(
    (x) => x,
    (e: unknown) => String((e as any)?.cause?.message ?? e),
  );
  console.log('removeSigner ->', JSON.stringify(r));
  await env.sandbox.control.setFaults({});
  const rec = await env.sandbox.client.getTransaction(status.transactionId!);
  console.log('provider', rec.status, JSON.stringify(rec.participants?.map((p: any) => [p.id === ada ? 'ada' : p.id, p.status])));
  await new Promise((r) => setTimeout(r, 30_000));
  const s = await handle.query(statusQuery);
  console.log('workflow after deadline', s.phase, JSON.stringify(s.participants));
  const rec2 = await env.sandbox.client.getTransaction(status.transactionId!);
  console.log('provider after', rec2.status);
  await handle.terminate('done').catch(() => undefined);
  expect(typeof r).toBe('object');
}, 90_000);
