// A backend that polls a transaction's status must see when its workflow ended without a result: a run that failed
// (here: its callbackUrl is not on the worker's allow-list) or that an operator terminated reads `failed`, with how it
// ended and its failure's type and message, instead of the phase its state had when it stopped (issue 40, defect 1).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getEsignStatus } from '../../src/client/transactions.js';
import { FailureType } from '../../src/failures.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({ deps: { allowedUrls: ['https://allowed.example'] } });
});
afterAll(async () => {
  await env?.close();
});

it('a failed run reads `failed`, with its failure type and message, and its referenceId', async () => {
  const input = env.input({ callbackUrl: 'https://elsewhere.example/hooks' });
  const { handle } = await env.start(input);
  await expect(handle.result()).rejects.toThrow();
  const status = await getEsignStatus(env.temporal.client, input.referenceId, 2_000);
  expect(status).toMatchObject({
    phase: 'failed',
    referenceId: input.referenceId,
    result: null,
    failure: { closedAs: 'failed', type: FailureType.UrlNotAllowed },
  });
  expect(status.failure!.message).toContain('callbackUrl');
});

it('a terminated run reads `failed`, terminated, with the operator’s reason', async () => {
  const input = env.input();
  const { handle } = await env.start(input);
  await waitForPhase(handle, 'awaiting_signatures');
  await handle.terminate('stopped by the operator');
  const status = await getEsignStatus(env.temporal.client, input.referenceId, 2_000);
  expect(status).toMatchObject({ phase: 'failed', result: null, failure: { closedAs: 'terminated', message: 'stopped by the operator' } });
  // What the run knew is kept: its provider transaction and participants.
  expect(status.transactionId).not.toBeNull();
  expect(status.participants).toHaveLength(2);
});
