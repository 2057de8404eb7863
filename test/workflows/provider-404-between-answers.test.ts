// Attack on the provider-404 confirmation (docs/decisions/provider-404-confirmed-by-a-second-read.md): "Any answer in
// between starts the count again." Here the provider answers in between (a cancel's withdraw is refused with 409 and
// the read after it returns the live transaction, one signer having signed), yet a second 404 ~30 s after the first
// ends the run `deleted`. A stale backend behind the provider's load balancer answers exactly so: 404 now and then.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { format } from 'prettier';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cancelEsignTransaction } from '../../src/client/transactions.js';
import { failureTypeOf } from '../../src/client/failures.js';
import { CURRENT_VERSION } from '../support/code-versions.js';
import { FailureType } from '../../src/failures.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { ProviderProxy } from '../support/provider-proxy.js';

let env: EsignTestEnv;
let proxy: ProviderProxy;
/** The transaction whose reads are scripted, and how the next read of it is answered. */
let target = '';
let next: 'pass' | '404' = 'pass';
beforeAll(async () => {
  // No bridge: the first signature's webhook is lost, so nothing but polls and the cancel reads the transaction.
  env = await startEsignTestEnv({
    providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
  });
  proxy.answer = (method, path) => {
    if (method !== 'GET' || !target || !path.endsWith(`/transactions/${target}`) || next !== '404') return undefined;
    next = 'pass';
    return { status: 404, detail: 'no such transaction (a stale backend)' };
  };
});
afterAll(async () => {
  await env?.close();
  await proxy?.close();
});

it('a 404, then the provider answering with the live transaction, then a 404 again does not end the run `deleted`', async () => {
  const input = env.input({ reconcileInterval: '30 seconds' });
  const { handle } = await env.start(input);
  const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
  await env.sandbox.control.signAs(transactionId!, participants[0]!.id);
  target = transactionId!;

  // 1. A poll meets the stale backend: 404 (counted: the list answers).
  next = '404';
  await expect.poll(() => proxy.answered.length, { timeout: 45_000, interval: 250 }).toBe(1);

  // 2. A cancel: the withdraw is refused (409, one has signed) and the read after it answers: the provider HAS it.
  const refused = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed').catch((e: unknown) => e);
  expect(failureTypeOf(refused)).toBe(FailureType.WithdrawRefused);

  // 3. The next poll (about 30 s after the first 404) meets the stale backend again.
  next = '404';
  await expect.poll(() => proxy.answered.length, { timeout: 45_000, interval: 250 }).toBe(2);
  await new Promise((r) => setTimeout(r, 3_000));

  // The provider answered in between: the count should have started again, and the run should still follow it.
  const described = await handle.describe();
  const result = described.status.name === 'COMPLETED' ? await handle.result() : undefined;
  expect(result).toBeUndefined();
  expect(described.status.name).toBe('RUNNING');
  // RECORD_REFUSAL_HISTORIES=1 keeps this path's history for test/workflows/replay.test.ts.
  if (process.env.RECORD_REFUSAL_HISTORIES === '1') {
    const path = fileURLToPath(new URL(`../replay/histories/${CURRENT_VERSION}/withdraw-answer-between-two-404s.json`, import.meta.url));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await format(historyToJSON(await handle.fetchHistory()), { filepath: path }));
  }
}, 150_000);
