// The provider sandbox's test controls (/_sandbox/*) mint tokens for any
// organization and sign for anyone: they are closed unless the sandbox listens
// on loopback (dev, tests) or the caller bears SANDBOX_ADMIN_TOKEN.
import { afterEach, expect, it } from 'vitest';
import { SandboxControlClient, SandboxControlError } from '../src/sandbox/control-client.js';
import { startTestSandbox, type TestSandbox } from './support/sandbox.js';

const opened: TestSandbox[] = [];
afterEach(async () => {
  for (const sb of opened.splice(0)) await sb.close();
});

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e as SandboxControlError,
  );

it('with an admin token: refuses requests without it or with another, accepts the token', async () => {
  const adminToken = 'admin-'.repeat(8);
  const sb = await startTestSandbox({ adminToken });
  opened.push(sb);
  for (const client of [
    new SandboxControlClient(sb.running.url),
    new SandboxControlClient(sb.running.url, { adminToken: 'x'.repeat(48) }),
  ]) {
    const err = await refusal(client.issueToken('other-org'));
    expect(err).toBeInstanceOf(SandboxControlError);
    expect(err!.status).toBe(401);
    expect(err!.message).toMatch(/SANDBOX_ADMIN_TOKEN/);
    expect(await refusal(client.stats())).toMatchObject({ status: 401 });
    await client.close();
  }
  const admin = new SandboxControlClient(sb.running.url, { adminToken });
  expect(await admin.issueToken('other-org')).toMatch(/^ey/);
  await admin.close();
  // Health stays open for orchestrators' probes.
  expect((await fetch(`${sb.running.url}/_sandbox/health`)).status).toBe(200);
});

it('without a token, closed when it listens beyond loopback, and says how to open it', async () => {
  const sb = await startTestSandbox({ host: '0.0.0.0' });
  opened.push(sb);
  const client = new SandboxControlClient(sb.running.url);
  const err = await refusal(client.signAs('any', 'any'));
  expect(err).toMatchObject({ status: 403 });
  expect(err!.message).toMatch(/closed: it listens on 0\.0\.0\.0, not loopback; set SANDBOX_ADMIN_TOKEN/);
  await client.close();
  // The spec's API is unaffected.
  expect((await sb.client.listTransactions()).total).toBe(0);
});
