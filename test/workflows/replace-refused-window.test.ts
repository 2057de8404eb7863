// A replace whose first attempt was given up on (timed out) and whose retry the provider refuses (4xx): the update
// fails, but the abandoned first PUT may still reach the provider. The window it may land in must be known all the
// same, so that a cancel that follows waits past it and withdraws again if it landed: a transaction reported cancelled
// must not be made signable by it (a cold review's defect; the replace that succeeds on its retry is
// test/workflows/provider-refusals.test.ts's).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { failureTypeOf } from '../../src/client/failures.js';
import { cancelEsignTransaction, getEsignTransaction } from '../../src/client/transactions.js';
import { replaceTransactionUpdate } from '../../src/definitions/transaction.js';
import { EsignClient } from '../../src/esign/client.js';
import { FailureType } from '../../src/failures.js';
import { recordHistory as record } from '../support/record-history.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { ProviderProxy } from '../support/provider-proxy.js';

let env: EsignTestEnv;
let proxy: ProviderProxy;
let releaseHeld: (() => void) | undefined;

beforeAll(async () => {
  env = await startEsignTestEnv({
    providerClient: async (sandbox) => {
      proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token);
      // The worker gives up on an unanswered request after 1 s (its headers timeout); one given up on may land for
      // 6 s more (with the connect timeout): room for the test to release it after the withdraw, on a slow machine too.
      return new EsignClient({ baseUrl: proxy.server.url, token: sandbox.token, connectTimeoutMs: 5_000, headersTimeoutMs: 1_000 });
    },
  });
});
afterAll(async () => {
  releaseHeld?.();
  await env?.close();
  await proxy?.close();
});

it('a replace retried after a timeout and refused (422): the transaction reported cancelled is not signable at the provider', async () => {
  const input = env.input();
  const { handle } = await env.start(input);
  const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');

  // The transaction's PUTs, in order: 1 the replace's first attempt, held unanswered (it lands once released);
  // 2 its retry, refused; 3 the cancel's withdraw; 4 the withdraw again, once the first attempt has landed.
  const release = new Promise<void>((r) => (releaseHeld = r));
  let puts = 0;
  proxy.answer = (method, path) => {
    if (method !== 'PUT' || !path.endsWith(`/transactions/${transactionId!}`)) return undefined;
    puts++;
    // Released once the withdraw has reached the provider: the first attempt lands after it.
    if (puts === 3) setTimeout(() => releaseHeld!(), 300);
    return puts === 2 ? { status: 422, detail: 'emailSubject refused' } : undefined;
  };
  proxy.hold = (method, path) => (method === 'PUT' && path.endsWith(`/transactions/${transactionId!}`) && puts === 1 ? release : undefined);

  const replaced = await getEsignTransaction(env.temporal.client, input.referenceId)
    .executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending', emailSubject: 'Please sign, corrected' }] })
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  expect(failureTypeOf(replaced), 'the replace fails with the provider refusal').toBe(FailureType.ProviderRejected);
  expect(puts).toBe(2);

  const cancelled = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'changed our mind');
  expect(cancelled.status).toBe('cancelled');
  await expect.poll(() => proxy.landed, { timeout: 10_000 }).toHaveLength(1);
  const atProvider = await env.sandbox.client.getTransaction(transactionId!);
  expect(atProvider.status, 'reported cancelled, yet signable at the provider').not.toBe('esign_pending');
  expect(puts, 'withdrawn again once the first attempt landed').toBe(4);
  await record(handle, 'replace-refused-lands-after-withdraw.json');
}, 90_000);
