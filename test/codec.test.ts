import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../src/codec/aes-gcm-codec.js';
import { buildCodecServer } from '../src/codec/server.js';
import { cancelUpdate, statusQuery } from '../src/definitions/transaction.js';
import { startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';

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
