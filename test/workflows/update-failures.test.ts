// An update in flight when its workflow fails (here: the input's callbackUrl is not on the worker's allow-list, found
// once the run validates it) rethrows the workflow's typed failure, so a backend's `failureTypeOf` says why, instead
// of the bare "the workflow completed before the update" (issue 40, defect 3).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { failureTypeOf } from '../../src/client/failures.js';
import { cancelEsignTransaction, issueSigningUrl } from '../../src/client/transactions.js';
import { FailureType } from '../../src/failures.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({ deps: { allowedUrls: ['https://allowed.example'] } });
});
afterAll(async () => {
  await env?.close();
});

const refused = () => env.input({ callbackUrl: 'https://elsewhere.example/hooks' });
const reason = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (err: unknown) => failureTypeOf(err) ?? `untyped: ${(err as Error).message}`,
  );

it('a signing URL asked with the start', async () => {
  expect(await reason(env.start(refused(), { signingUrlFor: { participantIds: ['p-1'] } }))).toBe(FailureType.UrlNotAllowed);
});

it('a signing URL asked while the run starts, and one asked after it failed', async () => {
  const input = refused();
  await env.start(input);
  expect(await reason(issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: ['p-1'] }))).toBe(
    FailureType.UrlNotAllowed,
  );
  expect(await reason(issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: ['p-1'] }))).toBe(
    FailureType.UrlNotAllowed,
  );
});

it('a cancel asked while the run starts', async () => {
  const input = refused();
  await env.start(input);
  expect(await reason(cancelEsignTransaction(env.temporal.client, input.referenceId))).toBe(FailureType.UrlNotAllowed);
});
