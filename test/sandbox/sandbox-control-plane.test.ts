// The provider sandbox's test controls (/_sandbox/*) mint tokens for any
// organization and sign for anyone: they are closed unless the sandbox listens
// on loopback (dev, tests) or the caller bears SANDBOX_ADMIN_TOKEN.
import { request } from 'undici';
import { afterEach, expect, it } from 'vitest';
import { SandboxControlClient, SandboxControlError } from '../../src/client/sandbox-control.js';
import { freePort } from '../../tools/support/net.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';

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
  // Beyond loopback it is reached by whatever names its network gives it (a compose service name): any Host.
  expect((await send(`${sb.running.url}/openapi.json`, 'GET', { host: 'sandbox:4010' })).status).toBe(200);
});

/** A request as a browser (or curl) would send it, with whatever Host, Origin and content type it likes. */
async function send(url: string, method: 'GET' | 'POST', headers: Record<string, string> = {}, body?: string) {
  const res = await request(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  return { status: res.statusCode, type: String(res.headers['content-type']), text };
}

it('DNS rebinding: on loopback without a token, answers only to the names it is reached by', async () => {
  const sb = await startTestSandbox();
  opened.push(sb);
  const { port } = new URL(sb.running.url);
  const json = { 'content-type': 'application/json' };
  // An attacker's name pointed at 127.0.0.1: the browser sends its own name as Host.
  for (const host of ['rebind.attacker.example', `rebind.attacker.example:${port}`, `127.0.0.1:${Number(port) + 1}`]) {
    const minted = await send(`${sb.running.url}/_sandbox/tokens`, 'POST', { ...json, host }, JSON.stringify({ ttlSeconds: 315360000 }));
    expect(minted.status, host).toBe(403);
    expect(minted.type).toContain('application/problem+json');
    expect(minted.text).not.toMatch(/"token"|ey[A-Za-z0-9_-]{10,}\./);
    const refused = JSON.parse(minted.text) as { status: number; detail: string };
    expect(refused.status).toBe(403);
    expect(refused.detail).toMatch(/answers only to/);
    // What a token would have read: the outbox, the deliveries; and the spec's API and the signing page too.
    for (const path of ['/_sandbox/outbox', '/_sandbox/webhooks/deliveries', '/_sandbox/stats', '/openapi.json', '/sign/x']) {
      expect((await send(`${sb.running.url}${path}`, 'GET', { host })).status, `${host} ${path}`).toBe(403);
    }
    expect((await send(`${sb.running.url}/transactions`, 'GET', { host, authorization: `Bearer ${sb.token}` })).status).toBe(403);
  }
  // Its own names keep working: 127.0.0.1, localhost and [::1] at its port.
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
    const minted = await send(`${sb.running.url}/_sandbox/tokens`, 'POST', { ...json, host }, '{}');
    expect(minted.status, host).toBe(200);
    expect((JSON.parse(minted.text) as { token: string }).token).toMatch(/^ey/);
  }
  expect((await send(`${sb.running.url}/_sandbox/health`, 'GET', { host: 'rebind.attacker.example' })).status).toBe(403);
});

it('a configured public URL is one of its names, and its origin may write', async () => {
  const port = await freePort();
  const sb = await startTestSandbox({ port, publicUrl: 'https://sandbox.example.test' });
  opened.push(sb);
  const direct = `http://127.0.0.1:${port}`;
  const json = { 'content-type': 'application/json' };
  // A proxy that keeps Host, and one that rewrites it to the sandbox's own address.
  expect((await send(`${direct}/_sandbox/stats`, 'GET', { host: 'sandbox.example.test' })).status).toBe(200);
  expect((await send(`${direct}/_sandbox/stats`, 'GET', { host: `127.0.0.1:${port}` })).status).toBe(200);
  expect((await send(`${direct}/_sandbox/stats`, 'GET', { host: 'other.example.test' })).status).toBe(403);
  const mint = (headers: Record<string, string>) => send(`${direct}/_sandbox/tokens`, 'POST', { ...json, ...headers }, '{}');
  expect((await mint({ host: 'sandbox.example.test', origin: 'https://sandbox.example.test' })).status).toBe(200);
  expect((await mint({ host: `127.0.0.1:${port}`, origin: 'https://sandbox.example.test' })).status).toBe(200);
  expect((await mint({ host: 'sandbox.example.test', origin: 'https://sandbox.example.test:8443' })).status).toBe(403);
  expect((await mint({ host: 'sandbox.example.test', origin: 'https://evil.example' })).status).toBe(403);
});

it('CSRF: a write from another site, or without JSON or a token, signs for no one', async () => {
  const sb = await startTestSandbox();
  opened.push(sb);
  const request_ = await uploadedRequest(sb.client);
  const created = await sb.client.createTransaction(request_);
  const signer = request_.participants[0]!;
  const sign = `${sb.running.url}/_sandbox/transactions/${created.id}/participants/${signer.id}/sign`;
  const json = { 'content-type': 'application/json' };
  const attempts: [string, Record<string, string>, string | undefined, number][] = [
    ['another origin', { ...json, origin: 'https://evil.example' }, '{}', 403],
    ['a cross-site fetch', { ...json, 'sec-fetch-site': 'cross-site' }, '{}', 403],
    ['a same-site fetch from another port', { ...json, 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:1' }, '{}', 403],
    ['an opaque origin', { ...json, origin: 'null' }, '{}', 403],
    ['a body-less POST', {}, undefined, 415],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'values=1', 415],
    ['a text body', { 'content-type': 'text/plain' }, '{}', 415],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--\r\n', 415],
  ];
  for (const [what, headers, body, status] of attempts) {
    const res = await send(sign, 'POST', headers, body);
    expect(res.status, what).toBe(status);
    expect(res.type, what).toContain('application/problem+json');
  }
  expect((await sb.client.getTransaction(created.id!)).participants[0]).toMatchObject({ status: 'pending' });
  // Minting a token the same ways: refused too.
  expect((await send(`${sb.running.url}/_sandbox/tokens`, 'POST')).status).toBe(415);
  expect((await send(`${sb.running.url}/_sandbox/tokens`, 'POST', { ...json, origin: 'https://evil.example' }, '{}')).status).toBe(403);

  // Its own page's request (same origin), and a program's (no Origin, JSON or a bearer token), go through.
  const own = { ...json, origin: new URL(sb.running.url).origin, 'sec-fetch-site': 'same-origin' };
  expect((await send(`${sb.running.url}/_sandbox/tokens`, 'POST', own, '{}')).status).toBe(200);
  expect((await send(`${sb.running.url}/_sandbox/tokens`, 'POST', { authorization: 'Bearer anything' })).status).toBe(200);
  expect((await send(sign, 'POST', json, '{}')).status).toBe(200);
  expect((await sb.client.getTransaction(created.id!)).participants[0]).toMatchObject({ status: 'signed' });
});
