// A callback endpoint that answers and then trickles its body a byte at a time
// is under every between-chunks timeout: without a deadline of its own, each
// delivery held an activity slot until it was cancelled and then for ever (the
// request ignored the cancellation), and each retry took another slot.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCompletionActivities } from '../../activities/completion.js';
import { CallbackSigner } from '../../activities/support/callback-signer.js';
import { UrlPolicy } from '../../activities/support/url-policy.js';

let server: Server;
let url: string;
let open = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    open++;
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => res.write('.'), 1_000);
    res.on('close', () => {
      clearInterval(timer);
      open--;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type Attempt = Parameters<ReturnType<typeof createCompletionActivities>['attemptLoggedEvent']>[0];
const event = { type: 'transaction.participant_signed', key: 'k1', sequence: 1, occurredAt: new Date().toISOString(), data: {} };

/** One delivery attempt of `event` to the trickling endpoint, as the event log's activity makes it. */
function attempt(env: MockActivityEnvironment) {
  const activities = createCompletionActivities({
    urlPolicy: new UrlPolicy([new URL(url).origin]),
    callbackSigner: new CallbackSigner([`whsec_${Buffer.from('a-callback-secret-of-24-bytes!!').toString('base64')}`]),
  });
  const run = (input: Attempt) => activities.attemptLoggedEvent(input);
  return env.run<[Attempt], Awaited<ReturnType<typeof run>>, typeof run>(run, { callbackUrl: url, event } as unknown as Attempt);
}

it('gives up on a trickling endpoint when the activity is cancelled, and lets go of the connection', async () => {
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const settled = attempt(env).then(
    () => Date.now() - started,
    () => Date.now() - started,
  );
  setTimeout(() => env.cancel(), 1_500);
  expect(await settled).toBeLessThan(6_000);
  await expect.poll(() => open, { timeout: 5_000 }).toBe(0);
});

it('takes the status as the answer and lets go of a trickling body on its own', async () => {
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const result = await attempt(env);
  // Delivered (the endpoint said 200), after the body's few seconds, not when the endpoint stops trickling.
  expect(result.outcome).toBe('delivered');
  expect(Date.now() - started).toBeLessThan(10_000);
  await expect.poll(() => open, { timeout: 5_000 }).toBe(0);
}, 30_000);
