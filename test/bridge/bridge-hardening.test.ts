// The bridge at OWASP ASVS level 2 (issue 38): only the webhook route and a
// cheap liveness on the public port, strong secrets or no start, one answer to
// every authentication failure, a rate limit per client address, replays
// refused across restarts, provider ids checked before they reach a URL, TLS.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { bridgeConfigFromEnv, startBridge, type RunningBridge } from '../../src/bridge/index.js';
import { projectRoot } from '../../tools/support/launch.js';
import { newSecret, postWebhook, signedHeaders } from '../support/bridge.js';
import { sendJson, StubHttpServer } from '../support/stub-http.js';

/** The provider: it knows no transaction, so every webhook is `stale` (200) after one read of its record. */
let provider: StubHttpServer;
const lookups = () => provider.requests.filter((r) => r.url.includes('/transactions'));
const running: RunningBridge[] = [];

beforeAll(async () => {
  provider = await StubHttpServer.start();
  provider.handler = (_req, res) => sendJson(res, 404, { title: 'Not Found', status: 404 }, { 'content-type': 'application/problem+json' });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((b) => b.stop()));
});
afterAll(async () => {
  await provider?.close();
});

async function bridge(env: Record<string, string>): Promise<RunningBridge> {
  const config = bridgeConfigFromEnv({
    BRIDGE_PORT: '0',
    BRIDGE_LOG: 'false',
    ESIGN_PROVIDER_URL: provider.url,
    ESIGN_PROVIDER_TOKEN: 'provider-token',
    ...env,
  });
  const started = await startBridge(config, { connection: { address: inject('temporalAddress') } });
  running.push(started);
  return started;
}

const declined = (transactionId: string = randomUUID(), notificationId: string = randomUUID()) =>
  JSON.stringify({
    event: 'esign-declined',
    entity: 'esign',
    data: { notificationId, entity_id: randomUUID(), transaction_id: transactionId },
  });

const get = async (url: string) => {
  const res = await request(url);
  return { status: res.statusCode, text: await res.body.text() };
};

describe('public and internal ports', () => {
  it('serves only the webhook route and /healthz publicly; readiness and metrics on the internal port', async () => {
    const secret = newSecret();
    const b = await bridge({ ESIGN_WEBHOOK_SECRETS: secret });
    expect(new URL(b.internalUrl).hostname).toBe('127.0.0.1');
    expect(new URL(b.internalUrl).port).not.toBe(new URL(b.url).port);
    const before = lookups().length;
    expect(await get(`${b.url}/healthz`)).toMatchObject({ status: 200 });
    // Nothing on the public port calls Temporal or exposes counters.
    for (const path of ['/metrics', '/readyz']) expect((await get(`${b.url}${path}`)).status).toBe(404);
    expect(lookups().length).toBe(before);

    const body = declined();
    expect((await postWebhook(b.url, body, signedHeaders(secret, body))).status).toBe(200);
    expect((await get(`${b.internalUrl}/readyz`)).status).toBe(200);
    const metrics = await get(`${b.internalUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/esign_bridge_webhooks_total\{outcome="stale"\} 1/);
    // The internal port has no webhook route.
    expect((await postWebhook(b.internalUrl, body, signedHeaders(secret, body))).status).toBe(404);
  });
});

describe('secrets', () => {
  const example = async () =>
    Object.fromEntries(
      (await readFile(join(projectRoot, '.env.example'), 'utf8'))
        .split('\n')
        .filter((l) => /^\w+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  const base = { ESIGN_PROVIDER_TOKEN: 'provider-token' };

  it("refuses .env.example's placeholders, short and low-variety secrets at start, naming the variable and what to do", async () => {
    const { ESIGN_WEBHOOK_SECRET } = await example();
    const refused: [Record<string, string>, RegExp][] = [
      [{ ESIGN_WEBHOOK_SECRETS: ESIGN_WEBHOOK_SECRET! }, /ESIGN_WEBHOOK_SECRETS holds a placeholder.*openssl rand -base64 32/],
      [{ ESIGN_WEBHOOK_SECRETS: 'whsec_REPLACEWITHBASE64' }, /ESIGN_WEBHOOK_SECRETS holds a placeholder/],
      [{ ESIGN_WEBHOOK_SECRETS: 'whsec_AAAA' }, /ESIGN_WEBHOOK_SECRETS decodes to 3 bytes, fewer than 24.*openssl rand/],
      [
        { ESIGN_WEBHOOK_SECRETS: `whsec_${Buffer.alloc(32).toString('base64')}` },
        /ESIGN_WEBHOOK_SECRETS decodes to bytes with too little variety/,
      ],
      [{ ESIGN_WEBHOOK_SECRETS: 'whsec_not base64!' }, /ESIGN_WEBHOOK_SECRETS is not "whsec_" followed by base64/],
      [{ ESIGN_WEBHOOK_SECRETS: `${newSecret()},whsec_CHANGEME` }, /ESIGN_WEBHOOK_SECRETS holds a placeholder/],
      [{ ESIGN_WEBHOOK_SHARED_SECRET: 'REPLACE_WITH_AT_LEAST_32_CHARACTERS' }, /ESIGN_WEBHOOK_SHARED_SECRET holds a placeholder/],
      [{ ESIGN_WEBHOOK_SHARED_SECRET: 'your-secret-here-0123456789abcdefghij' }, /ESIGN_WEBHOOK_SHARED_SECRET holds a placeholder/],
      [{ ESIGN_WEBHOOK_SHARED_SECRET: 'short-but-random-Zq81' }, /ESIGN_WEBHOOK_SHARED_SECRET is shorter than 32 characters/],
      [{ ESIGN_WEBHOOK_SHARED_SECRET: 'ab'.repeat(20) }, /ESIGN_WEBHOOK_SHARED_SECRET has too little variety/],
    ];
    for (const [env, message] of refused) {
      expect(() => bridgeConfigFromEnv({ ...base, ...env }), JSON.stringify(env)).toThrow(message);
    }
    // Never the value itself in the message.
    try {
      bridgeConfigFromEnv({ ...base, ESIGN_WEBHOOK_SHARED_SECRET: 'Tr0ub4dor&3-but-too-short' });
    } catch (err) {
      expect((err as Error).message).not.toContain('Tr0ub4dor');
    }
    // Real secrets pass: the sandbox's (32 bytes), the test support's (24 bytes), a random shared secret, hex too.
    for (const env of [
      { ESIGN_WEBHOOK_SECRETS: `whsec_${randomBytes(32).toString('base64')}` },
      { ESIGN_WEBHOOK_SECRETS: newSecret() },
      { ESIGN_WEBHOOK_SHARED_SECRET: randomBytes(32).toString('base64'), BRIDGE_REPLAY_STORE: join(tmpdir(), 'unused.sqlite') },
      { ESIGN_WEBHOOK_SHARED_SECRET: randomBytes(16).toString('hex'), BRIDGE_REPLAY_STORE: join(tmpdir(), 'unused.sqlite') },
    ])
      expect(() => bridgeConfigFromEnv({ ...base, ...env })).not.toThrow();
  });

  it('`npm run bridge` with the values of .env.example stops at once and says which variable to fix and how', async () => {
    const values = await example();
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', join(projectRoot, 'src/bridge/main.ts')],
        {
          env: { ...process.env, ESIGN_WEBHOOK_SECRETS: values.ESIGN_WEBHOOK_SECRET, ESIGN_PROVIDER_TOKEN: 't', BRIDGE_PORT: '0' },
          timeout: 30_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
      ),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /bridge failed to start: invalid bridge configuration: ESIGN_WEBHOOK_SECRETS holds a placeholder .* Generate one with `echo "whsec_\$\(openssl rand -base64 32\)"`/,
    );
  });

  it('a shared secret needs the replay store, and unauthenticated mode needs loopback', () => {
    expect(() => bridgeConfigFromEnv({ ...base, ESIGN_WEBHOOK_SHARED_SECRET: randomBytes(32).toString('base64') })).toThrow(
      /set BRIDGE_REPLAY_STORE/,
    );
    expect(() => bridgeConfigFromEnv({ ...base, ESIGN_WEBHOOK_INSECURE_DEV: 'true', BRIDGE_HOST: '0.0.0.0' })).toThrow(
      /loopback only, not BRIDGE_HOST=0\.0\.0\.0/,
    );
  });
});

describe('authentication failures', () => {
  it('answer every failure with the same 401: same status, type and body, whichever check failed', async () => {
    const secret = newSecret();
    const standard = await bridge({ ESIGN_WEBHOOK_SECRETS: secret, BRIDGE_RATE_LIMIT: '0' });
    const shared = randomBytes(32).toString('base64');
    const dir = await mkdtemp(join(tmpdir(), 'bridge-401-'));
    const sharedBridge = await bridge({
      ESIGN_WEBHOOK_SHARED_SECRET: shared,
      BRIDGE_REPLAY_STORE: join(dir, 'replay.sqlite'),
      BRIDGE_REPLAY_WINDOW: '1 ms',
      BRIDGE_RATE_LIMIT: '0',
    });
    const body = declined();
    const good = signedHeaders(secret, body);
    const cases: [string, string, Record<string, string>][] = [
      ['no headers', standard.url, { 'content-type': 'application/json' }],
      ['wrong secret', standard.url, signedHeaders(newSecret(), body)],
      ['stale timestamp', standard.url, signedHeaders(secret, body, { at: new Date(Date.now() - 3_600_000) })],
      ['timestamp not a number', standard.url, { ...good, 'webhook-timestamp': 'yesterday' }],
      ['no v1 signature', standard.url, { ...good, 'webhook-signature': 'v2,abc' }],
      ['signature of another body', standard.url, signedHeaders(secret, declined())],
      ['shared: no token', sharedBridge.url, { 'content-type': 'application/json' }],
      [
        'shared: wrong token',
        sharedBridge.url,
        { 'content-type': 'application/json', 'x-webhook-token': randomBytes(32).toString('base64') },
      ],
      [
        'shared: token one character short',
        sharedBridge.url,
        { 'content-type': 'application/json', 'x-webhook-token': shared.slice(0, -1) },
      ],
    ];
    const answers = new Map<string, string>();
    for (const [name, url, headers] of cases) {
      const res = await postWebhook(url, body, headers);
      answers.set(name, JSON.stringify({ status: res.status, type: res.headers['content-type'], body: res.text }));
    }
    // A replay in shared-secret mode (recorded before the window) gets that same answer too.
    const sharedHeaders = { 'content-type': 'application/json', 'x-webhook-token': shared };
    expect((await postWebhook(sharedBridge.url, body, sharedHeaders)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 20));
    const replay = await postWebhook(sharedBridge.url, body, sharedHeaders);
    answers.set('shared: replay', JSON.stringify({ status: replay.status, type: replay.headers['content-type'], body: replay.text }));

    expect(new Set(answers.values()).size, [...answers].join('\n')).toBe(1);
    const [only] = answers.values();
    expect(JSON.parse(only!)).toMatchObject({ status: 401, type: expect.stringContaining('application/problem+json') as string });
    expect(JSON.parse((JSON.parse(only!) as { body: string }).body)).toEqual({
      type: 'about:blank',
      title: 'Unauthorized',
      status: 401,
      detail: 'the request is not authenticated',
    });
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once an address has spent its burst, other addresses unaffected; failures cost more', async () => {
    const secret = newSecret();
    const b = await bridge({
      ESIGN_WEBHOOK_SECRETS: secret,
      BRIDGE_RATE_LIMIT: '1',
      BRIDGE_RATE_LIMIT_BURST: '3',
      BRIDGE_TRUST_PROXY: 'true',
    });
    const send = (address: string, headers?: Record<string, string>) => {
      const body = declined();
      return postWebhook(b.url, body, { ...(headers ?? signedHeaders(secret, body)), 'x-forwarded-for': address });
    };
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await send('203.0.113.7')).status);
    expect(statuses).toEqual([200, 200, 200]);
    const limited = await send('203.0.113.7');
    expect(limited.status).toBe(429);
    expect(String(limited.headers['content-type'])).toContain('application/problem+json');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const calls = lookups().length;
    expect((await send('203.0.113.7')).status).toBe(429);
    expect(lookups().length).toBe(calls); // a limited request costs the provider nothing
    // Another address has its own budget (an IPv6 client's is its /64).
    expect((await send('203.0.113.8')).status).toBe(200);
    expect((await send('2001:db8:1:2::1')).status).toBe(200);
    // One failed authentication spends more than a burst.
    expect((await send('203.0.113.9', { 'content-type': 'application/json' })).status).toBe(401);
    expect((await send('203.0.113.9')).status).toBe(429);
    const metrics = await get(`${b.internalUrl}/metrics`);
    expect(metrics.text).toMatch(/esign_bridge_webhooks_total\{outcome="rate_limited"\} 3/);
  });
});

describe('replays', () => {
  it('refuses the same webhook after a restart: no second provider read or signal, and a replay after the window is a 401', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bridge-replay-'));
    const shared = randomBytes(32).toString('base64');
    const env = { ESIGN_WEBHOOK_SHARED_SECRET: shared, BRIDGE_REPLAY_STORE: join(dir, 'replay.sqlite'), BRIDGE_RATE_LIMIT: '0' };
    const headers = { 'content-type': 'application/json', 'x-webhook-token': shared };
    const body = declined();

    const first = await bridge(env);
    expect((await postWebhook(first.url, body, headers)).json).toMatchObject({ status: 'stale' });
    const reads = lookups().length;
    await first.stop();
    running.splice(running.indexOf(first), 1);

    // A new process (a restart, or another replica on the same volume): it knows the id.
    const second = await bridge(env);
    const again = await postWebhook(second.url, body, headers);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ status: 'duplicate' });
    expect(lookups().length).toBe(reads);
    // The store is the bridge's alone: 0600 in a directory it created 0700.
    expect((await stat(join(dir, 'replay.sqlite'))).mode & 0o777).toBe(0o600);
    const nested = join(dir, 'new-dir', 'replay.sqlite');
    const third = await bridge({ ...env, BRIDGE_REPLAY_STORE: nested });
    expect((await stat(join(dir, 'new-dir'))).mode & 0o777).toBe(0o700);
    await third.stop();
    running.splice(running.indexOf(third), 1);
    await second.stop();
    running.splice(running.indexOf(second), 1);

    // Past the replay window, the same request is no redelivery but a replay: refused like a forgery.
    const late = await bridge({ ...env, BRIDGE_REPLAY_WINDOW: '1 ms' });
    const replay = await postWebhook(late.url, body, headers);
    expect(replay.status).toBe(401);
    expect(replay.json).toMatchObject({ detail: 'the request is not authenticated' });
    expect(lookups().length).toBe(reads);
    expect((await get(`${late.internalUrl}/metrics`)).text).toMatch(/esign_bridge_webhooks_total\{outcome="replayed"\} 1/);
  });
});

describe('provider ids', () => {
  it('refuses a transaction_id that is not a UUID (422 problem+json) before it reaches the provider', async () => {
    const secret = newSecret();
    const b = await bridge({ ESIGN_WEBHOOK_SECRETS: secret, BRIDGE_RATE_LIMIT: '0' });
    const before = provider.requests.length;
    for (const transactionId of ['..', '../../admin', '%2e%2e', 'x', `${randomUUID()}/documents`, `${randomUUID()}?status=completed`]) {
      for (const event of ['esign-completed', 'esign-declined']) {
        const body = JSON.stringify({
          event,
          entity: 'esign',
          data: { notificationId: randomUUID(), entity_id: randomUUID(), transaction_id: transactionId },
        });
        const res = await postWebhook(b.url, body, signedHeaders(secret, body));
        expect({ transactionId, status: res.status }).toEqual({ transactionId, status: 422 });
        expect(String(res.headers['content-type'])).toContain('application/problem+json');
        expect(JSON.stringify(res.json)).toContain('/data/transaction_id');
      }
    }
    expect(provider.requests.slice(before)).toEqual([]);
  });
});

describe('TLS', () => {
  it('serves the public port over HTTPS with BRIDGE_TLS_CERT_FILE and BRIDGE_TLS_KEY_FILE', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bridge-tls-'));
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      ],
      { stdio: 'ignore' },
    );
    const secret = newSecret();
    const b = await bridge({
      ESIGN_WEBHOOK_SECRETS: secret,
      BRIDGE_TLS_CERT_FILE: join(dir, 'cert.pem'),
      BRIDGE_TLS_KEY_FILE: join(dir, 'key.pem'),
    });
    expect(b.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const dispatcher = new Agent({ connect: { ca: await readFile(join(dir, 'cert.pem'), 'utf8') } });
    const body = declined();
    const res = await request(`${b.url}/webhooks/esign`, { method: 'POST', headers: signedHeaders(secret, body), body, dispatcher });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    await dispatcher.close();
    expect(() =>
      bridgeConfigFromEnv({ ESIGN_WEBHOOK_SECRETS: secret, ESIGN_PROVIDER_TOKEN: 't', BRIDGE_TLS_CERT_FILE: join(dir, 'cert.pem') }),
    ).toThrow(/set both BRIDGE_TLS_CERT_FILE and BRIDGE_TLS_KEY_FILE/);
  });
});
