// Data keys (docs/codec.md, "Data keys and erasure"), on a real SQLite key store: each workflow id's payloads under a
// key of its own, shared by every process with the store and the master keys; erasure makes exactly that workflow's
// payloads unreadable; a master key rotates without touching a payload; a lost store is said, never replaced.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Payload, SerializationContext } from '@temporalio/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { existsSync, rmSync } from 'node:fs';
import {
  AesGcmCodec,
  aesGcmCodecOf,
  CodecKeyUnknown,
  KEY_ID_METADATA,
  newCodecKeys,
  parseCodecKeys,
} from '../../src/codec/aes-gcm-codec.js';
import { dataConverterFromEnv } from '../../src/codec/data-converter.js';
import { orchestratorDataConverter } from '../../src/codec/key-store-config.js';
import { DATA_KEY_PREFIX, DataKeys, PayloadErased } from '../../src/codec/data-keys.js';
import { KeyStoreMissing } from '../../src/codec/key-store.js';
import { SqliteKeyStore } from '../../src/codec/sqlite-key-store.js';

const m1 = parseCodecKeys(newCodecKeys('m1'))[0]!;
const m2 = parseCodecKeys(newCodecKeys('m2'))[0]!;
const workflow = (workflowId: string): SerializationContext => ({ type: 'workflow', namespace: 'default', workflowId });
const activity = (workflowId: string): SerializationContext => ({ type: 'activity', namespace: 'default', workflowId, isLocal: false });
const payload = (text: string): Payload => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(text)) });
const text = (p: Payload | undefined) => Buffer.from(p!.data!).toString('utf8');
const keyIdOf = (p: Payload | undefined) => Buffer.from(p!.metadata![KEY_ID_METADATA]!).toString('utf8');

let path: string;
/** A process: its own store handle on the shared file, its own codec. */
const processWith = (masters = [m1], at = path) => {
  const store = new SqliteKeyStore({ path: at });
  return { store, codec: new AesGcmCodec(masters, { dataKeys: new DataKeys(store, masters) }) };
};

beforeEach(async () => {
  path = join(await mkdtemp(join(tmpdir(), 'esign-data-keys-')), 'keys.sqlite');
  await new SqliteKeyStore({ path }).init();
});

describe('data keys', () => {
  it("encrypt each workflow's payloads under its own key, which every process with the store reads", async () => {
    const worker = processWith();
    const [a] = await worker.codec.encode([payload('ada@example.com')], workflow('esign-a'));
    const [b] = await worker.codec.encode([payload('alan@example.com')], workflow('esign-b'));
    const [activityOfA] = await worker.codec.encode([payload('x')], activity('esign-a'));
    expect(keyIdOf(a).startsWith(DATA_KEY_PREFIX)).toBe(true);
    expect(keyIdOf(a)).not.toBe(keyIdOf(b));
    expect(keyIdOf(activityOfA)).toBe(keyIdOf(a));
    // No workflow to belong to (the codec endpoint's /encode): the master key, as before data keys.
    expect(keyIdOf((await worker.codec.encode([payload('y')]))[0])).toBe('m1');

    const client = processWith();
    expect(text((await client.codec.decode([a!]))[0])).toContain('ada@example.com');
    // Another process that starts the same workflow at once gets the key that stood, not a second one.
    const [again] = await client.codec.encode([payload('z')], workflow('esign-a'));
    expect(keyIdOf(again)).toBe(keyIdOf(a));
    const raced = await Promise.all(
      Array.from({ length: 10 }, (_, i) => processWith().codec.encode([payload(String(i))], workflow('esign-race'))),
    );
    expect(new Set(raced.map(([p]) => keyIdOf(p))).size).toBe(1);
  });

  it("erasure makes exactly that workflow's payloads unreadable; the workflow id used again gets a new key", async () => {
    const { codec, store } = processWith();
    const [a] = await codec.encode([payload('ada@example.com')], workflow('esign-a'));
    const [b] = await codec.encode([payload('alan@example.com')], workflow('esign-b'));
    const [erased] = await store.erase('esign-a', new Date().toISOString(), 'dpo:kim');
    expect(erased).toMatchObject({ id: keyIdOf(a), subject: 'esign-a', erasedBy: 'dpo:kim' });
    expect(erased!.wrapped).toBeUndefined();

    await expect(processWith().codec.decode([a!])).rejects.toBeInstanceOf(PayloadErased);
    await expect(codec.decode([b!, a!])).rejects.toThrow(/was erased at/);
    expect(text((await codec.decode([b!]))[0])).toContain('alan@example.com');
    const [reused] = await codec.encode([payload('new')], workflow('esign-a'));
    expect(keyIdOf(reused)).not.toBe(keyIdOf(a));
    expect(text((await codec.decode([reused!]))[0])).toContain('new');
  });

  it('a master key rotates by rewrapping the data keys: histories untouched, the old master then dropped', async () => {
    const before = processWith([m1]);
    const [a] = await before.codec.encode([payload('ada@example.com')], workflow('esign-a'));
    await before.codec.encode([payload('x')], workflow('esign-b'));
    // Without the master key that wraps it, a data key is refused naming that master key.
    await expect(processWith([m2]).codec.decode([a!])).rejects.toThrow(/no codec key with id "m1".*wraps data key/);
    expect(await new DataKeys(new SqliteKeyStore({ path }), [m2, m1]).rewrapAll()).toEqual({ rewrapped: 2, live: 2, erased: 0 });
    expect(text((await processWith([m2]).codec.decode([a!]))[0])).toContain('ada@example.com');
  });

  it('a process without the store, or whose store is lost, refuses with what to do; master key ids cannot pose as data keys', async () => {
    const [a] = await processWith().codec.encode([payload('ada@example.com')], workflow('esign-a'));
    const plain = new AesGcmCodec([m1]);
    await expect(plain.decode([a!])).rejects.toBeInstanceOf(CodecKeyUnknown);
    await expect(plain.decode([a!])).rejects.toThrow(/no key store \(set ESIGN_KEY_STORE\)/);

    const lost = processWith([m1], join(tmpdir(), 'esign-no-such-dir', 'keys.sqlite'));
    await expect(lost.codec.decode([a!])).rejects.toBeInstanceOf(KeyStoreMissing);
    await expect(lost.codec.encode([payload('x')], workflow('esign-b'))).rejects.toThrow(/restore it from its backup/);
    expect(() => parseCodecKeys(`${DATA_KEY_PREFIX}x:${m1.key.toString('base64')}`)).toThrow(/name data keys/);
  });

  it("ESIGN_KEY_STORE: every process's converter uses it, and one that is not there is refused at start, not replaced", async () => {
    const keys = newCodecKeys('m1');
    const converter = orchestratorDataConverter({ ESIGN_CODEC_KEYS: keys, ESIGN_KEY_STORE: `sqlite:${path}` });
    // A backend's converter (the client package) takes the store from its caller: one named but not given is refused.
    expect(() => dataConverterFromEnv({ ESIGN_CODEC_KEYS: keys, ESIGN_KEY_STORE: `sqlite:${path}` })).toThrow(
      /pass it as the keyStore option/,
    );
    const [a] = await aesGcmCodecOf(converter!.payloadCodecs)!.encode([payload('x')], workflow('esign-a'));
    expect(keyIdOf(a).startsWith(DATA_KEY_PREFIX)).toBe(true);
    // What the worker, the bridge and the codec endpoint do at start.
    const missing = join(tmpdir(), 'esign-no-such-dir', 'keys.sqlite');
    const lost = aesGcmCodecOf(orchestratorDataConverter({ ESIGN_CODEC_KEYS: keys, ESIGN_KEY_STORE: `sqlite:${missing}` })!.payloadCodecs)!;
    await expect(lost.dataKeys!.store()).rejects.toBeInstanceOf(KeyStoreMissing);
    expect(existsSync(missing)).toBe(false);
    expect(() => orchestratorDataConverter({ ESIGN_CODEC_KEYS: keys, ESIGN_KEY_STORE: 'redis://x' })).toThrow(/ESIGN_KEY_STORE must be/);
    expect(aesGcmCodecOf(orchestratorDataConverter({ ESIGN_CODEC_KEYS: keys })!.payloadCodecs)!.dataKeys).toBeUndefined();
  });

  it('a store replaced under a running process takes none of its writes; one of another id is refused (ESIGN_KEY_STORE_ID)', async () => {
    const worker = processWith();
    const { storeId } = await (await worker.codec.dataKeys!.store()).open();
    await worker.codec.encode([payload('before')], workflow('esign-a'));
    // The file is lost and a store is put in its place (a restore, `esign keys init`).
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    await new SqliteKeyStore({ path }).init();
    await expect(worker.codec.encode([payload('Jane Roe')], workflow('esign-b'))).rejects.toThrow(
      /removed or replaced since this process opened it/,
    );

    const pinned = (id: string) => new AesGcmCodec([m1], { dataKeys: new DataKeys(new SqliteKeyStore({ path }), [m1], { storeId: id }) });
    await expect(pinned(storeId).dataKeys!.store()).rejects.toThrow(new RegExp(`is [0-9a-f-]+, not ${storeId} \\(ESIGN_KEY_STORE_ID\\)`));
    const { storeId: now } = await new SqliteKeyStore({ path }).open();
    await expect(pinned(now).dataKeys!.store()).resolves.toBeDefined();
  });
});
