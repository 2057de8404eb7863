// A backend's integration test signs and declines in the sandbox through the client package's helper, by its
// referenceId and a participant id, with no browser; the helper refuses anything that is not the sandbox (issue 40).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { actInSandbox, NotTheSandbox, SandboxActRefused } from '../../src/client/sandbox.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { StubHttpServer } from '../support/stub-http.js';

let env: EsignTestEnv;
let stub: StubHttpServer;
beforeAll(async () => {
  env = await startEsignTestEnv();
  stub = await StubHttpServer.start();
  stub.handler = (_req, res) => {
    res.statusCode = 404;
    res.end('{}');
  };
});
afterAll(async () => {
  await env?.close();
  await stub?.close();
});

it('signs as each participant by referenceId: the transaction completes and is archived', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  const { handle } = await env.start(input);
  const { participants } = await waitForPhase(handle, 'awaiting_signatures');
  const sandboxUrl = env.sandbox.running.url;
  expect(await actInSandbox(env.temporal.client, input.referenceId, participants[0]!.id, { sandboxUrl })).toMatchObject({
    completed: false,
  });
  expect(await actInSandbox(env.temporal.client, input.referenceId, participants[1]!.id, { sandboxUrl })).toMatchObject({
    completed: true,
  });
  expect(await handle.result()).toMatchObject({ status: 'completed', archive: { uri: expect.any(String) as string } });
});

it('declines with a reason: the transaction ends declined by that participant', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  const { handle } = await env.start(input);
  const { participants } = await waitForPhase(handle, 'awaiting_signatures');
  await actInSandbox(env.temporal.client, input.referenceId, participants[1]!.id, {
    sandboxUrl: env.sandbox.running.url,
    decline: { reason: 'wrong salary' },
  });
  expect(await handle.result()).toMatchObject({ status: 'declined', declinedBy: { participantId: participants[1]!.id } });
});

it('refuses a URL that is not the sandbox, and a participant the transaction does not have', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  const { handle } = await env.start(input);
  const { participants } = await waitForPhase(handle, 'awaiting_signatures');
  await expect(actInSandbox(env.temporal.client, input.referenceId, participants[0]!.id, { sandboxUrl: stub.url })).rejects.toBeInstanceOf(
    NotTheSandbox,
  );
  expect(stub.requests.map((r) => r.url)).toEqual(['/sandbox/pins']);
  await expect(
    actInSandbox(env.temporal.client, input.referenceId, 'nobody', { sandboxUrl: env.sandbox.running.url }),
  ).rejects.toBeInstanceOf(SandboxActRefused);
  await handle.terminate('test over');
});

it('refuses a provider that answers the probe without being the sandbox: a catch-all page, a redirect to a sandbox', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  const { handle } = await env.start(input);
  const { participants } = await waitForPhase(handle, 'awaiting_signatures');
  const act = () =>
    actInSandbox(env.temporal.client, input.referenceId, participants[0]!.id, { sandboxUrl: stub.url, adminToken: 'admin' });
  try {
    // Any path answered 200 text/plain, as a health page or a catch-all route may.
    stub.requests.length = 0;
    stub.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('OK\n');
    };
    await expect(act()).rejects.toBeInstanceOf(NotTheSandbox);
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /sandbox/pins']);
    // A provider sending `/sandbox/*` on to a sandbox of its own: the probe is not followed there.
    stub.requests.length = 0;
    stub.handler = (_req, res) => {
      res.writeHead(302, { location: `${env.sandbox.running.url}/sandbox/pins` });
      res.end();
    };
    await expect(act()).rejects.toBeInstanceOf(NotTheSandbox);
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /sandbox/pins']);
  } finally {
    await handle.terminate('test over');
  }
});
