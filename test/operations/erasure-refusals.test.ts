// What an erasure must refuse, from a hostile review of it, on the real stack (the dev server, a worker with the key
// store, the sandbox): a name that is not a referenceId's (the holds register, another referenceId's event log); a
// run that starts while it erases; payloads under a master key, which no erasure reaches; a key store that is not
// there (nothing ended first). And what held: every payload of a transaction and its event log is under one of that
// referenceId's own data keys. The happy path is in personal-data-in-history.test.ts.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { encryptingDataConverter } from '../../src/codec/data-converter.js';
import { DataKeys } from '../../src/codec/data-keys.js';
import { KeyStoreMissing } from '../../src/codec/key-store.js';
import { SqliteKeyStore } from '../../src/codec/sqlite-key-store.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { eventLogIdFor } from '../../src/definitions/event-log.js';
import { esignCompletedSignal } from '../../src/definitions/transaction.js';
import { eraseReference } from '../../src/records/erase.js';
import { startDataKeyEnv, type DataKeyEnv } from '../support/data-key-env.js';
import { completedWebhook, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import type { EventReceiver } from '../support/event-receiver.js';

const masters = parseCodecKeys(newCodecKeys('mk-2026'));
let store: SqliteKeyStore;
let codec: AesGcmCodec;
let client: Client;
let env: EsignTestEnv;
let receiver: EventReceiver;
let stack: DataKeyEnv | undefined;

beforeAll(async () => {
  stack = await startDataKeyEnv(masters);
  ({ store, codec, client, env, receiver } = stack);
}, 60_000);
afterAll(() => stack?.close());

const deps = (dataKeys = codec.dataKeys!) => ({ client, dataKeys, holds: async () => [] });
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'erased',
    (err: Error) => `${err.name}: ${err.message}`,
  );

/** A transaction with an event log, signed to its end; its log still runs (it stays to redeliver). */
async function completed() {
  const input = env.input({ callbackUrl: receiver.url });
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
  expect((await handle.result()).status).toBe('completed');
  await expect.poll(() => receiver.of('transaction.completed').filter((e) => e.data.referenceId === input.referenceId).length).toBe(1);
  return { input, handle };
}

describe('erasure refuses', () => {
  it("what is not a referenceId's own: the holds register, another referenceId's event log; their keys stay", async () => {
    const payload: Payload = { metadata: { [METADATA_ENCODING_KEY]: Buffer.from('json/plain') }, data: Buffer.from('"x"') };
    for (const workflowId of ['esign-legal-holds', 'esign-events-x-1', 'esign-records-retention'])
      await codec.encode([payload], { type: 'workflow', namespace: 'default', workflowId });
    for (const name of ['legal-holds', 'events-x-1', 'records-retention', 'evidence-upkeep', 'a b', ''])
      expect(await refusal(eraseReference(deps(), name, 'dpo:kim'))).toMatch(/^ErasureRefused: .* is not a referenceId/);
    for (const workflowId of ['esign-legal-holds', 'esign-events-x-1', 'esign-records-retention'])
      expect((await store.current(workflowId))?.wrapped).toBeDefined();
  });

  it('a run that starts while it erases: refused, and that run reads its input', async () => {
    const input = env.input();
    let started: string | undefined;
    // The holds are read between the listing and the keys' destruction: a start of the referenceId lands there.
    const holds = async () => {
      started = (await env.start(input)).handle.workflowId;
      return [];
    };
    expect(await refusal(eraseReference({ ...deps(), holds }, input.referenceId, 'dpo:kim'))).toMatch(/still runs: esign-/);
    const history = await env.temporal.client.workflow.getHandle(started!).fetchHistory();
    await expect(codec.decode(history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!)).resolves.toHaveLength(1);
    await client.workflow.getHandle(started!).terminate('test over');
  });

  it('payloads a process without the key store wrote under the master key: refused, never reported erased', async () => {
    const backend = new Client({
      connection: env.temporal.client.connection,
      namespace: env.temporal.namespace,
      dataConverter: encryptingDataConverter(new AesGcmCodec(masters)),
    });
    const input = env.input();
    input.documents[0]!.source = { path: join(env.archiveDir, '..', 'missing.pdf') }; // fails at once: nothing to sign
    const { handle } = await startEsignTransaction(backend, input, { taskQueue: env.taskQueue });
    await handle.result().catch(() => undefined);
    const refused = await refusal(eraseReference(deps(), input.referenceId, 'dpo:kim'));
    expect(refused).toMatch(new RegExp(`^ErasureRefused: \\d+ payload\\(s\\) of ${handle.workflowId} .* under a codec master key`));
    expect(await store.current(handle.workflowId)).toBeDefined();
  });

  it('without its key store: nothing ended (its event log runs on) and nothing destroyed', async () => {
    const { input } = await completed();
    const missing = new DataKeys(new SqliteKeyStore({ path: join(tmpdir(), `esign-no-store-${Date.now()}`, 'keys.sqlite') }), masters);
    const err = await eraseReference(deps(missing), input.referenceId, 'dpo:kim', { closeEventLog: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyStoreMissing);
    expect((await client.workflow.getHandle(eventLogIdFor(input.referenceId)).describe()).status.name).toBe('RUNNING');
    expect(await refusal(eraseReference(deps(), input.referenceId, 'dpo:kim'))).toMatch(/--close-event-log/);
    await expect(eraseReference(deps(), input.referenceId, 'dpo:kim', { closeEventLog: true })).resolves.toMatchObject({
      referenceId: input.referenceId,
    });
  });
});

it("every payload of a transaction and its event log is under one of that referenceId's own data keys", async () => {
  const { input, handle } = await completed();
  const own = new Map<string, string>();
  for (const workflowId of [handle.workflowId, eventLogIdFor(input.referenceId)])
    own.set((await store.current(workflowId))!.id, workflowId);
  const foreign: string[] = [];
  for (const workflowId of own.values()) {
    const history = await env.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    JSON.stringify(history, (key, value: unknown) => {
      const p = value as Payload | undefined;
      const encoding = p?.metadata?.[METADATA_ENCODING_KEY];
      if (encoding && Buffer.from(encoding).toString() === ENCRYPTED_ENCODING) {
        const keyId = Buffer.from(p.metadata![KEY_ID_METADATA]!).toString();
        if (!own.has(keyId)) foreign.push(`${workflowId}: ${key} under ${keyId}`);
      }
      return value;
    });
  }
  expect(foreign).toEqual([]);
  expect(own.size).toBe(2);
});
