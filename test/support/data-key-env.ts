// The test stack with data keys (docs/codec.md, "Data keys and erasure"): a fresh SQLite key store, a codec over it
// for the worker and the clients, and a receiver of the integrator's events (so transactions have event logs).
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { AesGcmCodec, type CodecKey } from '../../src/codec/aes-gcm-codec.js';
import { encryptingDataConverter } from '../../src/codec/data-converter.js';
import { DataKeys } from '../../src/codec/data-keys.js';
import { SqliteKeyStore } from '../../src/codec/sqlite-key-store.js';
import { startEsignTestEnv, type EsignTestEnv } from './esign-env.js';
import { EventReceiver } from './event-receiver.js';

export interface DataKeyEnv {
  store: SqliteKeyStore;
  codec: AesGcmCodec;
  env: EsignTestEnv;
  receiver: EventReceiver;
  /** An operator's client, with the codec and the key store (a listing decodes memos). */
  client: Client;
  close(): Promise<void>;
}

export async function startDataKeyEnv(masters: readonly CodecKey[]): Promise<DataKeyEnv> {
  const store = new SqliteKeyStore({ path: join(await mkdtemp(join(tmpdir(), 'esign-keys-')), 'keys.sqlite') });
  await store.init();
  const codec = new AesGcmCodec(masters, { dataKeys: new DataKeys(store, masters) });
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = await EventReceiver.start(secret);
  const env = await startEsignTestEnv({
    dataConverter: encryptingDataConverter(codec),
    deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] },
  });
  const client = new Client({
    connection: env.temporal.client.connection,
    namespace: env.temporal.namespace,
    dataConverter: encryptingDataConverter(codec),
  });
  return {
    store,
    codec,
    env,
    receiver,
    client,
    async close() {
      await env.close();
      await receiver.close();
    },
  };
}
