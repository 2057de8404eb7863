// The SQLite key store: the contract every store keeps, then what only a file can show. An erased key's bytes are
// gone from the file and from its write-ahead log, read as raw bytes; the file and its companions are the owner's
// only; a file that holds no store is never turned into one by opening it; and processes that start the same
// workflow at once, each with its own connection, agree on one key.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyStoreMissing } from '../../src/codec/key-store.js';
import { SqliteKeyStore } from '../../src/codec/sqlite-key-store.js';
import { describeKeyStoreContract, newRecord } from './key-store-contract.js';

describeKeyStoreContract('SqliteKeyStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'esign-key-store-'));
  const path = join(dir, 'keys.sqlite');
  return {
    store: new SqliteKeyStore({ path }),
    reopen: async () => new SqliteKeyStore({ path }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('SqliteKeyStore on disk', () => {
  let dir: string;
  let path: string;
  const stores: SqliteKeyStore[] = [];
  const storeAt = (at = path) => {
    const store = new SqliteKeyStore({ path: at });
    stores.push(store);
    return store;
  };
  /** The file and its log as they are on disk now. */
  const onDisk = async () => ({
    file: await readFile(path),
    wal: existsSync(`${path}-wal`) ? await readFile(`${path}-wal`) : Buffer.alloc(0),
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'esign-key-store-'));
    path = join(dir, 'keys.sqlite');
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves no copy of an erased key in the file or its write-ahead log', async () => {
    const store = storeAt();
    await store.init();
    // Another process's connection, which keeps reading across the erasure.
    const other = storeAt();
    // Keys around it on the same pages, so the erased one is not simply a page that goes away.
    for (let i = 0; i < 20; i++) await store.create(newRecord(`esign-before-${i}`));
    const pattern = Buffer.alloc(64);
    for (let i = 0; i < 64; i++) pattern[i] = (0xa5 + 37 * i) & 0xff;
    const erasedKey = newRecord('esign-erased', pattern);
    await store.create(erasedKey);
    // Once checkpointed into the file, and once more in the log (rewrapped, the same bytes written again).
    await store.erase('esign-unrelated', new Date().toISOString(), 'test');
    await other.rewrap(erasedKey.id, pattern, 'm2');
    for (let i = 0; i < 20; i++) await other.create(newRecord(`esign-after-${i}`));
    const before = await onDisk();
    expect(before.file.includes(pattern)).toBe(true);
    expect(before.wal.includes(pattern)).toBe(true);

    const [tombstone] = await store.erase('esign-erased', new Date().toISOString(), 'dpo:kim');
    expect(tombstone).toMatchObject({ id: erasedKey.id });
    const after = await onDisk();
    expect(after.file.includes(pattern)).toBe(false);
    expect(after.wal.includes(pattern)).toBe(false);
    expect(after.wal.length).toBe(0);
    // Nor a part of it large enough to matter.
    for (let i = 0; i + 16 <= 64; i += 8) expect(after.file.includes(pattern.subarray(i, i + 16)), `bytes ${i}-${i + 16}`).toBe(false);
    expect((await other.get(erasedKey.id))?.wrapped).toBeUndefined();
    expect((await other.current('esign-before-3'))?.wrapped).toHaveLength(60);
  });

  it('is readable by its owner only, the log and shared memory too', async () => {
    await storeAt().init();
    await storeAt().create(newRecord('esign-a'));
    for (const suffix of ['', '-wal', '-shm']) {
      expect(existsSync(path + suffix), suffix).toBe(true);
      expect((await stat(path + suffix)).mode & 0o777, suffix).toBe(0o600);
    }
    // In a directory it makes, the directory too.
    const nested = join(dir, 'data', 'keys.sqlite');
    await storeAt(nested).init();
    expect((await stat(join(dir, 'data'))).mode & 0o777).toBe(0o700);
    expect((await stat(nested)).mode & 0o777).toBe(0o600);
  });

  it('opens nothing that is not a store, and leaves it as it was', async () => {
    await expect(storeAt().open()).rejects.toBeInstanceOf(KeyStoreMissing);
    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}-wal`)).toBe(false);
    // An empty file (an interrupted init), then another SQLite database: neither is a store, neither is changed.
    await writeFile(path, '');
    await expect(storeAt().open()).rejects.toThrow(`no key store at ${path}: restore it from its backup`);
    expect((await stat(path)).size).toBe(0);
    await rm(path);
    const foreign = new Database(path);
    foreign.exec('CREATE TABLE notes (text TEXT)');
    foreign.close();
    const bytes = await readFile(path);
    await expect(storeAt().open()).rejects.toBeInstanceOf(KeyStoreMissing);
    expect((await readFile(path)).equals(bytes)).toBe(true);
    // An interrupted init can be run again.
    await rm(path);
    await writeFile(path, '');
    const identity = await storeAt().init();
    expect(await storeAt().open()).toEqual(identity);
  });

  it('keeps at most one live key a subject, whatever writes to the file', async () => {
    const store = storeAt();
    await store.init();
    const a = newRecord('esign-a');
    await store.create(a);
    const raw = new Database(path);
    try {
      const insert = raw.prepare('INSERT INTO data_keys (id, subject, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?, ?)');
      expect(() => insert.run('dk.second', 'esign-a', randomBytes(60), 'm1', a.createdAt)).toThrow(/UNIQUE constraint failed/);
      // An erased key takes no place: the subject's next key goes in beside its tombstone.
      raw.prepare("UPDATE data_keys SET wrapped = NULL, erased_at = 'then' WHERE id = ?").run(a.id);
      expect(() => insert.run('dk.second', 'esign-a', randomBytes(60), 'm1', a.createdAt)).not.toThrow();
      // A tombstone keeps no key, and a live key has one.
      expect(() => raw.prepare("UPDATE data_keys SET erased_at = 'now' WHERE id = 'dk.second'").run()).toThrow(/CHECK constraint failed/);
    } finally {
      raw.close();
    }
    expect((await store.current('esign-a'))?.id).toBe('dk.second');
  });

  it('lists page by page, so that each record can be rewrapped as it is listed (a master key’s rotation)', async () => {
    const store = storeAt();
    await store.init();
    const made = [];
    for (let i = 0; i < 450; i++) made.push(await store.create(newRecord(`esign-${i}`)));
    await store.erase('esign-7', new Date().toISOString(), 'dpo:kim');
    const seen: string[] = [];
    for await (const record of store.list()) {
      seen.push(record.id);
      if (record.wrapped) await store.rewrap(record.id, randomBytes(60), 'm2');
    }
    expect(seen).toEqual(made.map((r) => r.id));
    let m2 = 0;
    for await (const record of storeAt().list()) if (record.masterKeyId === 'm2') m2++;
    expect(m2).toBe(449);
  });

  it('makes one key a subject for processes that ask at once', async () => {
    await storeAt().init();
    const subjects = Array.from({ length: 10 }, (_, i) => `esign-race-${i}`);
    const startAt = Date.now() + 3000;
    const moduleUrl = new URL('../../src/codec/sqlite-key-store.ts', import.meta.url).href;
    const script = `
      import { randomBytes } from 'node:crypto';
      const { SqliteKeyStore } = await import(${JSON.stringify(moduleUrl)});
      const store = new SqliteKeyStore({ path: process.env.KEY_STORE });
      await store.open();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(process.env.START_AT) - Date.now())));
      const subjects = JSON.parse(process.env.SUBJECTS);
      const ids = [];
      for (const subject of subjects) {
        const id = 'dk.' + randomBytes(16).toString('base64url');
        const stood = await store.create({ id, subject, wrapped: randomBytes(60), masterKeyId: 'm1', createdAt: new Date().toISOString() });
        ids.push(stood.id);
      }
      await store.close();
      process.stdout.write(JSON.stringify(ids));
    `;
    const run = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          env: { ...process.env, KEY_STORE: path, START_AT: String(startAt), SUBJECTS: JSON.stringify(subjects) },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`child exited ${code}: ${err}`))));
      });
    const answers = await Promise.all([run(), run(), run(), run()]);
    const store = storeAt();
    for (const [i, subject] of subjects.entries()) {
      const live = (await store.current(subject))!.id;
      expect(
        answers.map((ids) => ids[i]),
        subject,
      ).toEqual([live, live, live, live]);
    }
    let records = 0;
    for await (const _record of store.list()) records++;
    expect(records).toBe(subjects.length);
  });
});
