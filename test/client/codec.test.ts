import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { codecConfigFromEnv } from '../../src/codec/config.js';
import { buildCodecServer, type CodecToken } from '../../src/codec/server.js';
import { projectRoot } from '../../tools/support/launch.js';
import { cancelUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

const oldKeys = newCodecKeys('2025-01');
const keys = `${newCodecKeys('2026-11')},${oldKeys}`; // rotation: new key encrypts, both decrypt
const codec = new AesGcmCodec(parseCodecKeys(keys));
let env: EsignTestEnv;
let server: FastifyInstance;
let url: string;

beforeAll(async () => {
  env = await startEsignTestEnv({ dataConverter: { payloadCodecs: [codec] } });
  server = await buildCodecServer({ codec, corsOrigins: ['http://localhost:8233'], authToken: 'operator-token-1234' });
  url = await server.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

it('keeps participant data out of the raw history, and the codec endpoint decodes it for operators', async () => {
  const input = env.input();
  input.participants[0]!.personalPassword = 'signer-secret-pw';
  input.participants[0]!.authenticationType = 'personal-password';
  const { handle } = await env.start(input);
  await expect.poll(async () => (await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');

  // Raw, as stored by the server: no e-mail, name or password anywhere, including activity inputs.
  const raw = await env.temporal.client.workflow.getHandle(handle.workflowId).fetchHistory();
  const text = JSON.stringify(raw, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v));
  for (const secret of ['ada@example.com', 'alan@example.com', 'Lovelace', 'signer-secret-pw']) expect(text).not.toContain(secret);
  // Search attributes stay readable for operators (they never hold personal data).
  expect(text).toContain(input.referenceId);

  const started = raw.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  const body = {
    payloads: [
      {
        metadata: Object.fromEntries(Object.entries(started.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
        data: Buffer.from(started.data!).toString('base64'),
      },
    ],
  };
  const decode = (headers: Record<string, string>) =>
    fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  const res = await decode({ authorization: 'Bearer operator-token-1234', origin: 'http://localhost:8233', 'x-namespace': 'default' });
  expect(res.status).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
  const decoded = (await res.json()) as { payloads: { data: string }[] };
  expect(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()).toContain('ada@example.com');

  expect((await decode({})).status).toBe(401);
  expect((await decode({ authorization: 'Bearer operator-token-1234', origin: 'https://evil.example' })).status).toBe(403);
  await handle.executeUpdate(cancelUpdate, { args: [{}] });
});

it('decrypts payloads written with an older key after a rotation, and refuses an unknown key', async () => {
  const before = new AesGcmCodec(parseCodecKeys(oldKeys));
  const [payload] = await before.encode([
    { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('"x"') },
  ]);
  const [back] = await codec.decode([payload!]);
  expect(new TextDecoder().decode(back!.data)).toBe('"x"');
  await expect(new AesGcmCodec(parseCodecKeys(newCodecKeys('other'))).decode([payload!])).rejects.toThrow(/no codec key with id "2025-01"/);
});

describe('the codec endpoint at ASVS level 2', () => {
  const tokenA = randomBytes(32).toString('base64');
  const tokenB = randomBytes(32).toString('base64');
  const tokenAll = randomBytes(32).toString('base64');
  const tokens: CodecToken[] = [
    { id: 'team-a', token: tokenA, namespaces: ['ns-a'], encode: false },
    { id: 'team-b', token: tokenB, namespaces: ['ns-b', 'ns-c'], encode: true },
    { id: 'auditor', token: tokenAll, namespaces: '*', encode: false },
  ];
  const secretText = 'Ada Lovelace, signer-secret-pw';
  let app: FastifyInstance;
  let base: string;
  const audit: Record<string, unknown>[] = [];
  let encrypted: { payloads: { metadata: Record<string, string>; data: string }[] };

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) audit.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    app = await buildCodecServer({ codec, corsOrigins: ['http://localhost:8233'], tokens, audit: pino({}, sink) });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    const [payload] = await codec.encode([
      { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(secretText)) },
    ]);
    encrypted = {
      payloads: [1, 2, 3].map(() => ({
        metadata: Object.fromEntries(Object.entries(payload!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
        data: Buffer.from(payload!.data!).toString('base64'),
      })),
    };
  });
  afterAll(async () => {
    await app?.close();
  });

  const call = (path: string, headers: Record<string, string>, body: unknown = encrypted) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('keeps /healthz open (the compose health check has no token) while /decode needs one', async () => {
    // With the one token of ESIGN_CODEC_AUTH_TOKEN, as docker-compose.yml configures it (its health check has none).
    const legacy = await buildCodecServer({ codec, corsOrigins: [], authToken: tokenAll, audit: false });
    try {
      const url = await legacy.listen({ host: '127.0.0.1', port: 0 });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const decode = (headers: Record<string, string>) =>
        fetch(`${url}/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(encrypted),
        });
      expect((await decode({ 'x-namespace': 'default' })).status).toBe(401);
      expect((await decode({ 'x-namespace': 'default', authorization: `Bearer ${tokenAll}` })).status).toBe(200);
    } finally {
      await legacy.close();
    }
    // With per-namespace tokens.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const missing = await call('/decode', { 'x-namespace': 'ns-a' });
    const wrong = await call('/decode', { 'x-namespace': 'ns-a', authorization: `Bearer ${randomBytes(32).toString('base64')}` });
    const short = await call('/decode', { 'x-namespace': 'ns-a', authorization: `Bearer ${tokenA.slice(0, -1)}` });
    const bodies = await Promise.all([missing, wrong, short].map(async (r) => ({ status: r.status, body: await r.text() })));
    expect(bodies.map((b) => b.status)).toEqual([401, 401, 401]);
    expect(new Set(bodies.map((b) => b.body)).size).toBe(1); // one answer, whichever way the token is wrong
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('lets a token decode only for its namespaces, X-Namespace as the Web UI and CLI send it', async () => {
    const a = await call('/decode', { authorization: `Bearer ${tokenA}`, 'x-namespace': 'ns-a' });
    expect(a.status).toBe(200);
    expect(Buffer.from(((await a.json()) as typeof encrypted).payloads[0]!.data, 'base64').toString()).toContain('Ada Lovelace');
    const other = await call('/decode', { authorization: `Bearer ${tokenA}`, 'x-namespace': 'ns-b' });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { detail: string }).detail).toBe('this token may not decode for namespace "ns-b"');
    expect((await call('/decode', { authorization: `Bearer ${tokenA}` })).status).toBe(403); // no namespace named
    expect((await call('/decode', { authorization: `Bearer ${tokenB}`, 'x-namespace': 'ns-c' })).status).toBe(200);
    expect((await call('/decode', { authorization: `Bearer ${tokenB}`, 'x-namespace': 'ns-a' })).status).toBe(403);
    expect((await call('/decode', { authorization: `Bearer ${tokenAll}`, 'x-namespace': 'anything' })).status).toBe(200);
  });

  it('serves /encode only to a token granted it', async () => {
    const plain = {
      payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"x"').toString('base64') }],
    };
    const refused = await call('/encode', { authorization: `Bearer ${tokenA}`, 'x-namespace': 'ns-a' }, plain);
    expect(refused.status).toBe(403);
    expect((await call('/encode', { authorization: `Bearer ${tokenAll}`, 'x-namespace': 'ns-a' }, plain)).status).toBe(403);
    const granted = await call('/encode', { authorization: `Bearer ${tokenB}`, 'x-namespace': 'ns-b' }, plain);
    expect(granted.status).toBe(200);
    const [back] = await codec.decode(
      ((await granted.json()) as typeof encrypted).payloads.map((p) => ({
        metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
        data: Buffer.from(p.data, 'base64'),
      })),
    );
    expect(Buffer.from(back!.data!).toString()).toBe('"x"');
  });

  it("keeps the Web UI's CORS: the preflight needs no token and allows X-Namespace and Authorization", async () => {
    const preflight = await fetch(`${base}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-namespace, authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/x-namespace.*authorization/);
    const refusedOrigin = await fetch(`${base}/decode`, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(refusedOrigin.status).toBe(403);
    // A refusal still carries the CORS headers, so the UI can read why.
    const denied = await call('/decode', { origin: 'http://localhost:8233', 'x-namespace': 'ns-a' });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
  });

  it('audits every decryption: token id, namespace and count, never the token or the payloads', async () => {
    audit.length = 0;
    expect((await call('/decode', { authorization: `Bearer ${tokenA}`, 'x-namespace': 'ns-a' })).status).toBe(200);
    expect((await call('/decode', { authorization: `Bearer ${tokenA}`, 'x-namespace': 'ns-b' })).status).toBe(403);
    expect((await call('/decode', { 'x-namespace': 'ns-a' })).status).toBe(401);
    expect(audit).toEqual([
      expect.objectContaining({ event: 'codec.decode', outcome: 'ok', tokenId: 'team-a', namespace: 'ns-a', payloads: 3 }),
      expect.objectContaining({ event: 'codec.decode', outcome: 'refused', status: 403, tokenId: 'team-a', namespace: 'ns-b' }),
      expect.objectContaining({ event: 'codec.decode', outcome: 'refused', status: 401, tokenId: null, namespace: 'ns-a' }),
    ]);
    const text = JSON.stringify(audit);
    for (const secret of [tokenA, 'Ada Lovelace', encrypted.payloads[0]!.data.slice(0, 24)]) expect(text).not.toContain(secret);
  });

  it('refuses to start bound beyond loopback without a token, and refuses placeholder or weak tokens', async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          ['--import', 'tsx', join(projectRoot, 'src/codec/main.ts')],
          { env: { ...process.env, ESIGN_CODEC_KEYS: keys, ESIGN_CODEC_PORT: '0', ...env }, timeout: 30_000 },
          (error, stdout, stderr) =>
            resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, out: `${stdout}${stderr}` }),
        );
        // A server that did start is stopped once it says so (the old behaviour): the test then fails on its exit code.
        child.stdout?.on('data', (c: Buffer) => c.toString().includes('codec endpoint on') && child.kill('SIGTERM'));
      });
    const open = await run({ ESIGN_CODEC_HOST: '0.0.0.0' });
    expect(open.code).toBe(1);
    expect(open.out).toMatch(/bound to ESIGN_CODEC_HOST=0\.0\.0\.0 \(beyond loopback\) it needs a token: set ESIGN_CODEC_TOKENS/);
    // With the placeholder from .env.example it does not start either.
    const example = /^ESIGN_CODEC_AUTH_TOKEN=(.*)$/m.exec(await readFile(join(projectRoot, '.env.example'), 'utf8'))![1]!;
    const placeholder = await run({ ESIGN_CODEC_HOST: '0.0.0.0', ESIGN_CODEC_AUTH_TOKEN: example });
    expect(placeholder.code).toBe(1);
    expect(placeholder.out).toMatch(/ESIGN_CODEC_AUTH_TOKEN holds a placeholder .*openssl rand -base64 32/);

    expect(() => codecConfigFromEnv({ ESIGN_CODEC_AUTH_TOKEN: 'operator-token-1234' })).toThrow(/shorter than 32 characters/);
    expect(() => codecConfigFromEnv({ ESIGN_CODEC_TOKENS: `ops:${'ab'.repeat(20)}:default` })).toThrow(
      /ESIGN_CODEC_TOKENS entry 1 \("ops"\)'s token has too little variety/,
    );
    expect(() => codecConfigFromEnv({ ESIGN_CODEC_TOKENS: `ops:${tokenA}` })).toThrow(/must be <id>:<token>:<namespace>/);
    expect(() => codecConfigFromEnv({ ESIGN_CODEC_TOKENS: `ops:${tokenA}:default:admin` })).toThrow(/"decode" or "decode\+encode"/);
    expect(() => codecConfigFromEnv({ ESIGN_CODEC_TOKENS: `a:${tokenA}:x,a:${tokenB}:y` })).toThrow(/"a" is used twice/);
    // Loopback without a token is the development default; the legacy single token keeps working, decode only.
    expect(codecConfigFromEnv({}).tokens).toEqual([]);
    const dir = await mkdtemp(join(tmpdir(), 'codec-tokens-'));
    await writeFile(join(dir, 'tokens'), `# ops team\nops:${tokenA}:default|staging:decode+encode\nauditor:${tokenB}:*\n`, { mode: 0o600 });
    expect(
      codecConfigFromEnv({ ESIGN_CODEC_HOST: '0.0.0.0', ESIGN_CODEC_AUTH_TOKEN: tokenAll, ESIGN_CODEC_TOKENS_FILE: join(dir, 'tokens') })
        .tokens,
    ).toEqual([
      { id: 'default', token: tokenAll, namespaces: '*', encode: false },
      { id: 'ops', token: tokenA, namespaces: ['default', 'staging'], encode: true },
      { id: 'auditor', token: tokenB, namespaces: '*', encode: false },
    ]);
  });

  it('without tokens, answers only on loopback (whatever it was bound to)', async () => {
    const open = await buildCodecServer({ codec, corsOrigins: [], audit: false });
    const post = (host: string) =>
      fetch(`http://${host}:${port}/decode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    let port = 0;
    try {
      port = Number(new URL(await open.listen({ host: '0.0.0.0', port: 0 })).port);
      expect((await post('127.0.0.1')).status).toBe(200);
      // Reached on one of this machine's other addresses: refused.
      const external = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal);
      if (external) expect((await post(external.address)).status).toBe(403);
    } finally {
      await open.close();
    }
  });
});
