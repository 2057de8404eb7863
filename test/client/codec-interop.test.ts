// The payload encryption format (docs/codec.md), proven from outside our
// codec: a second implementation that follows only the document (WebCrypto
// and Temporal's protobuf definitions) talks to ours in both directions and
// to a real worker; a plaintext start is refused; and the real Temporal CLI
// reads and updates workflows through the codec endpoint.
import { execFile } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { buildCodecServer } from '../../src/codec/server.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

const keys = `${newCodecKeys('2026-11')},${newCodecKeys('2026-05')}`;
const bin = fileURLToPath(new URL('../../bin/esign.js', import.meta.url));
const ours = new AesGcmCodec(parseCodecKeys(keys), { plaintext: 'refuse' });

/** docs/codec.md, implemented again without our code: "<id>:<base64 32 bytes>", first encrypts. */
class DocumentedCodec implements PayloadCodec {
  readonly #keys: { id: string; key: Promise<webcrypto.CryptoKey> }[];
  constructor(spec: string) {
    this.#keys = spec.split(',').map((entry) => {
      const [id, b64] = entry.split(':') as [string, string];
      return { id, key: webcrypto.subtle.importKey('raw', Buffer.from(b64, 'base64'), 'AES-GCM', false, ['encrypt', 'decrypt']) };
    });
  }
  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.#keys[0]!;
    return Promise.all(
      payloads.map(async (p) => {
        const plaintext = proto.temporal.api.common.v1.Payload.encode(p).finish();
        const nonce = webcrypto.getRandomValues(new Uint8Array(12));
        const sealed = new Uint8Array(await webcrypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce, tagLength: 128 }, await key, plaintext));
        return {
          metadata: { encoding: new TextEncoder().encode('binary/encrypted'), 'encryption-key-id': new TextEncoder().encode(id) },
          data: Buffer.concat([nonce, sealed]), // WebCrypto appends the tag: nonce ‖ ciphertext ‖ tag
        };
      }),
    );
  }
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (p) => {
        if (new TextDecoder().decode(p.metadata?.encoding) !== 'binary/encrypted') return p;
        const id = new TextDecoder().decode(p.metadata?.['encryption-key-id']);
        const key = this.#keys.find((k) => k.id === id);
        if (!key) throw new Error(`unknown key id ${id}`);
        const data = p.data!;
        const opened = await webcrypto.subtle.decrypt(
          { name: 'AES-GCM', iv: data.subarray(0, 12), tagLength: 128 },
          await key.key,
          data.subarray(12),
        );
        return proto.temporal.api.common.v1.Payload.decode(new Uint8Array(opened));
      }),
    );
  }
}
const documented = new DocumentedCodec(keys);

let env: EsignTestEnv;
let server: FastifyInstance;
let codecUrl: string;
beforeAll(async () => {
  // The worker uses our codec and refuses plaintext; clients below use the documented one, or none.
  env = await startEsignTestEnv({ dataConverter: { payloadCodecs: [ours] } });
  server = await buildCodecServer({ codec: ours, corsOrigins: [] });
  codecUrl = await server.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

describe('payload encryption', () => {
  it('round-trips between the documented implementation and ours, both ways, and after a rotation', async () => {
    const payload: Payload = {
      metadata: { encoding: new TextEncoder().encode('json/plain') },
      data: new TextEncoder().encode('{"name":"Ada Lovelace"}'),
    };
    const [byThem] = await documented.encode([payload]);
    expect(Buffer.from(byThem!.data!).toString('latin1')).not.toContain('Ada');
    expect(Buffer.from((await ours.decode([byThem!]))[0]!.data!).toString()).toBe('{"name":"Ada Lovelace"}');
    const [byUs] = await ours.encode([payload]);
    expect(new TextDecoder().decode(byUs!.metadata!['encryption-key-id'])).toBe('2026-11');
    expect(Buffer.from((await documented.decode([byUs!]))[0]!.data!).toString()).toBe('{"name":"Ada Lovelace"}');
    // A payload written with the older key still decodes.
    const older = new DocumentedCodec(keys.split(',').reverse().join(','));
    expect(Buffer.from((await ours.decode(await older.encode([payload])))[0]!.data!).toString()).toBe('{"name":"Ada Lovelace"}');
  });

  it('runs a workflow for a client that speaks only the documented format', async () => {
    const client = new Client({ connection: env.temporal.client.connection, dataConverter: { payloadCodecs: [documented] } });
    const started = await client.workflow.start('esignTransaction', {
      taskQueue: env.taskQueue,
      workflowId: `esign-interop-${Date.now()}`,
      args: [env.input()],
    });
    await expect.poll(async () => (await started.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
    const status = await started.query(statusQuery);
    expect(status.participants.map((p) => p.name)).toEqual(['Ada Lovelace', 'Alan Turing']);
  });

  it('refuses a workflow started without the codec, saying why', async () => {
    const plain = env.temporal.client; // no codec
    const handle = await plain.workflow.start('esignTransaction', {
      taskQueue: env.taskQueue,
      workflowId: `esign-plain-${Date.now()}`,
      args: [env.input()],
    });
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e as Error & { cause?: { type?: string; message?: string } },
    );
    expect(err?.cause).toMatchObject({ type: 'InvalidInput' });
    expect(err?.cause?.message).toMatch(/arrived unencrypted/);
  });

  it('serves the real Temporal CLI through the codec endpoint: query, update and show', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    await expect.poll(async () => (await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
    const participant = (await handle.query(statusQuery)).participants[0]!;
    const cli = (...args: string[]) =>
      new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          inject('temporalCliPath')!,
          [...args, '--workflow-id', handle.workflowId, '--address', inject('temporalAddress'), '--codec-endpoint', codecUrl, '-o', 'json'],
          { timeout: 30_000 },
          (error, stdout, stderr) => resolve({ code: error ? 1 : 0, out: `${stdout}${stderr}` }),
        ),
      );
    const query = await cli('workflow', 'query', '--name', 'status');
    expect(query.code, query.out).toBe(0);
    expect(query.out).toContain('Ada Lovelace');
    const update = await cli(
      'workflow',
      'update',
      'execute',
      '--name',
      'issueSigningUrl',
      '--input',
      JSON.stringify({ participantIds: [participant.id] }),
    );
    expect(update.code, update.out).toBe(0);
    expect(update.out).toMatch(/\/sign\//);
    const show = await cli('workflow', 'show');
    expect(show.code, show.out).toBe(0);
    // Decoded for the operator: the start event's input is plain JSON again.
    const events = (
      JSON.parse(show.out) as { events: { workflowExecutionStartedEventAttributes?: { input: { payloads: { data: string }[] } } }[] }
    ).events;
    const input = events[0]!.workflowExecutionStartedEventAttributes!.input.payloads[0]!.data;
    expect(typeof input === 'string' ? Buffer.from(input, 'base64').toString() + input : JSON.stringify(input)).toContain(
      'ada@example.com',
    );
  });

  it('the esign CLI says what to do when keys are missing or wrong, the data dir is wrong, or Temporal is down', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    await expect.poll(async () => (await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
    const referenceId = handle.workflowId.replace(/^esign-/, '');
    const empty = await mkdtemp(join(tmpdir(), 'esign-nokeys-'));
    const esign = (env2: Record<string, string>, ...args: string[]) =>
      new Promise<{ code: number; stderr: string; stdout: string }>((resolve) =>
        execFile(process.execPath, [bin, ...args], { env: { ...bare, ...env2 }, timeout: 30_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        ),
      );
    const bare = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ESIGN_CODEC'))) as Record<string, string>;
    const at = { TEMPORAL_ADDRESS: inject('temporalAddress'), ESIGN_DATA_DIR: empty };

    const noKeys = await esign(at, 'status', referenceId);
    expect(noKeys.code).toBe(1);
    expect(noKeys.stderr).toMatch(/encrypted and no codec keys were found: set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE/);
    const wrongKeys = await esign({ ...at, ESIGN_CODEC_KEYS: newCodecKeys('someone-else') }, 'status', referenceId);
    expect(wrongKeys.stderr).toMatch(/encrypted with codec key "2026-11", which ESIGN_CODEC_KEYS does not hold/);
    const good = await esign({ ...at, ESIGN_CODEC_KEYS: keys }, '--json', 'status', referenceId);
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ phase: 'awaiting_signatures' });

    const noDir = await esign({ ...at, ESIGN_DATA_DIR: join(empty, 'missing') }, 'status', referenceId);
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toMatch(/ESIGN_DATA_DIR ".*missing" does not exist/);
    const down = await esign({ ...at, TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'status', referenceId);
    expect(down.code).toBe(5);
    expect(down.stderr).toMatch(/cannot reach Temporal at 127\.0\.0\.1:1.*npm run dev/);
  });
});
