// What every key store must do (src/codec/key-store.ts), whatever it keeps its records in: created once and never
// replaced, a lost store said rather than made anew; one live key a subject, however many processes ask at once;
// an erasure that leaves a tombstone without the key, and a new key for the subject afterwards; rewrapping; listing;
// and all of it seen by another handle on the same location.
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyStoreExists, KeyStoreMissing, type DataKeyRecord, type KeyStore } from '../../src/codec/key-store.js';

export interface KeyStoreHarness {
  /** A store at a location where none was created yet. */
  store: KeyStore;
  /** Another handle on the same location, as another process would open it. */
  reopen: () => Promise<KeyStore>;
  cleanup: () => Promise<void>;
}

let counter = 0;
/** A record as DataKeys makes one: a fresh id, 60 random bytes for the wrapped key. */
export function newRecord(subject: string, wrapped: Buffer = randomBytes(60)): DataKeyRecord & { wrapped: Buffer } {
  counter++;
  return {
    id: `dk.${randomBytes(16).toString('base64url')}`,
    subject,
    wrapped,
    masterKeyId: 'm1',
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, counter)).toISOString(),
  };
}

async function all(store: KeyStore): Promise<DataKeyRecord[]> {
  const records: DataKeyRecord[] = [];
  for await (const record of store.list()) records.push(record);
  return records.sort((a, b) => a.id.localeCompare(b.id));
}

const byId = (records: DataKeyRecord[]) => [...records].sort((a, b) => a.id.localeCompare(b.id));

export function describeKeyStoreContract(name: string, make: () => Promise<KeyStoreHarness>): void {
  describe(`${name} (key store contract)`, () => {
    let h: KeyStoreHarness;
    const opened: KeyStore[] = [];
    const reopen = async () => {
      const store = await h.reopen();
      opened.push(store);
      return store;
    };
    /** A created store, and a second handle on it. */
    const created = async () => {
      await h.store.init();
      const other = await reopen();
      await other.open();
      return { store: h.store, other };
    };

    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      await h?.store.close();
      await h?.cleanup();
    });

    it('is created once, opened where it was created, and said to be missing (with what to do) where it was not', async () => {
      const missing = h.store.open();
      await expect(missing).rejects.toBeInstanceOf(KeyStoreMissing);
      await expect(missing).rejects.toThrow(`no key store at ${h.store.location}: restore it from its backup`);
      await expect(h.store.open()).rejects.toThrow(/create a new one with `esign keys init` only for a namespace with no data keys yet/);
      // Every use opens it, and is refused the same way; none of them made a store.
      await expect(h.store.current('wf-1')).rejects.toBeInstanceOf(KeyStoreMissing);
      await expect(h.store.create(newRecord('wf-1'))).rejects.toBeInstanceOf(KeyStoreMissing);
      await expect((await reopen()).get('dk.x')).rejects.toBeInstanceOf(KeyStoreMissing);
      await expect((await reopen()).open()).rejects.toBeInstanceOf(KeyStoreMissing);

      const identity = await h.store.init();
      expect(identity.storeId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Date(identity.createdAt).toISOString()).toBe(identity.createdAt);
      expect(await h.store.open()).toEqual(identity);
      await expect(h.store.init()).rejects.toBeInstanceOf(KeyStoreExists);
      const other = await reopen();
      await expect(other.init()).rejects.toBeInstanceOf(KeyStoreExists);
      expect(await other.open()).toEqual(identity);
      expect(await (await reopen()).open()).toEqual(identity);
    });

    it('keeps a key and finds it by id and as its subject’s live key', async () => {
      const { store, other } = await created();
      const record = newRecord('esign-tx-1');
      expect(await store.create(record)).toEqual(record);
      expect(await store.get(record.id)).toEqual(record);
      expect(await store.current('esign-tx-1')).toEqual(record);
      expect(await other.get(record.id)).toEqual(record);
      expect(await other.current('esign-tx-1')).toEqual(record);
      expect(await store.current('esign-tx-2')).toBeUndefined();
      expect(await store.get('dk.AAAAAAAAAAAAAAAAAAAAAA')).toBeUndefined();
      // A subject may hold any character a workflow id may.
      const odd = newRecord('acme/ref ü#?%../x');
      expect(await other.create(odd)).toEqual(odd);
      expect(await store.current('acme/ref ü#?%../x')).toEqual(odd);
      // Asked again for a subject with a live key: the live key, not a second one.
      expect(await store.create(newRecord('esign-tx-1'))).toEqual(record);
    });

    it('makes one key for a subject however many processes ask at once', async () => {
      const { store, other } = await created();
      const third = await reopen();
      const handles = [store, other, third];
      const asked = Array.from({ length: 20 }, () => newRecord('esign-race'));
      const stood = await Promise.all(asked.map((record, i) => handles[i % handles.length]!.create(record)));
      const ids = new Set(stood.map((r) => r.id));
      expect(ids.size).toBe(1);
      const winner = asked.find((r) => ids.has(r.id))!;
      expect(winner).toBeDefined();
      for (const r of stood) expect(r).toEqual(winner);
      for (const handle of handles) expect(await handle.current('esign-race')).toEqual(winner);
      // The losers' keys were never kept: the store lists the winner alone.
      expect((await all(store)).filter((r) => r.subject === 'esign-race')).toEqual([winner]);

      // Several subjects at once: a key each.
      const subjects = Array.from({ length: 6 }, (_, i) => `esign-many-${i}`);
      const many = await Promise.all(subjects.flatMap((s) => [store.create(newRecord(s)), other.create(newRecord(s))]));
      for (const [i, s] of subjects.entries()) {
        expect(many[2 * i]!.id).toBe(many[2 * i + 1]!.id);
        expect((await third.current(s))?.id).toBe(many[2 * i]!.id);
      }
      expect(new Set(many.map((r) => r.id)).size).toBe(subjects.length);
    });

    it('erases a subject’s key: a tombstone without the key, nothing live, and a new key when the subject comes back', async () => {
      const { store, other } = await created();
      const a = newRecord('esign-a');
      const b = newRecord('esign-b');
      await store.create(a);
      await store.create(b);
      expect(await other.current('esign-a')).toEqual(a);

      const erased = await store.erase('esign-a', '2026-02-01T00:00:00.000Z', 'dpo:kim');
      const { wrapped: _key, ...kept } = a;
      const tombstone = { ...kept, erasedAt: '2026-02-01T00:00:00.000Z', erasedBy: 'dpo:kim' };
      expect(erased).toEqual([tombstone]);
      expect(erased[0]!.wrapped).toBeUndefined();
      for (const handle of [store, other]) {
        expect(await handle.get(a.id)).toEqual(tombstone);
        expect((await handle.get(a.id))!.wrapped).toBeUndefined();
        expect(await handle.current('esign-a')).toBeUndefined();
        expect(await handle.get(b.id)).toEqual(b);
        expect(await handle.current('esign-b')).toEqual(b);
      }

      // The same workflow id used again (a referenceId reused): a new key, the tombstone untouched.
      const again = newRecord('esign-a');
      expect(await other.create(again)).toEqual(again);
      expect(again.id).not.toBe(a.id);
      expect(await store.current('esign-a')).toEqual(again);
      expect(await store.get(a.id)).toEqual(tombstone);

      // And erased in its turn, the first tombstone as it was.
      const [second] = await other.erase('esign-a', '2026-03-01T00:00:00.000Z', 'dpo:lee');
      expect(second).toMatchObject({ id: again.id, erasedAt: '2026-03-01T00:00:00.000Z', erasedBy: 'dpo:lee' });
      expect(await store.get(again.id)).not.toHaveProperty('wrapped');
      expect(await store.get(a.id)).toEqual(tombstone);
    });

    it('erases idempotently: nothing live to erase is no error, and changes nothing', async () => {
      const { store, other } = await created();
      const a = newRecord('esign-a');
      await store.create(a);
      const [tombstone] = await store.erase('esign-a', '2026-02-01T00:00:00.000Z', 'dpo:kim');
      expect(await store.erase('esign-a', '2026-02-02T00:00:00.000Z', 'dpo:lee')).toEqual([]);
      expect(await other.erase('esign-a', '2026-02-02T00:00:00.000Z', 'dpo:lee')).toEqual([]);
      expect(await store.erase('never-seen', '2026-02-02T00:00:00.000Z', 'dpo:lee')).toEqual([]);
      expect(await other.get(a.id)).toEqual(tombstone);
      // Erased at once by two processes: erased once, for both.
      await store.create(newRecord('esign-twice'));
      const both = await Promise.all([
        store.erase('esign-twice', '2026-02-03T00:00:00.000Z', 'x'),
        other.erase('esign-twice', '2026-02-03T00:00:00.000Z', 'x'),
      ]);
      expect(both.flat().length).toBeGreaterThanOrEqual(1);
      expect(await store.current('esign-twice')).toBeUndefined();
      expect(await other.current('esign-twice')).toBeUndefined();
    });

    it('rewraps a live key, and refuses an erased or unknown one', async () => {
      const { store, other } = await created();
      const a = newRecord('esign-a');
      const b = newRecord('esign-b');
      await store.create(a);
      await store.create(b);
      const rewrapped = randomBytes(60);
      await other.rewrap(a.id, rewrapped, 'm2');
      for (const handle of [store, other]) {
        expect(await handle.get(a.id)).toEqual({ ...a, wrapped: rewrapped, masterKeyId: 'm2' });
        expect(await handle.current('esign-a')).toEqual({ ...a, wrapped: rewrapped, masterKeyId: 'm2' });
      }
      await store.erase('esign-b', '2026-02-01T00:00:00.000Z', 'dpo:kim');
      await expect(other.rewrap(b.id, randomBytes(60), 'm2')).rejects.toThrow(`data key "${b.id}" was erased at 2026-02-01T00:00:00.000Z`);
      expect(await store.get(b.id)).not.toHaveProperty('wrapped');
      expect((await store.get(b.id))!.masterKeyId).toBe('m1');
      await expect(store.rewrap('dk.AAAAAAAAAAAAAAAAAAAAAA', randomBytes(60), 'm2')).rejects.toThrow(
        `the key store (${store.location}) holds no data key "dk.AAAAAAAAAAAAAAAAAAAAAA"`,
      );
    });

    it('lists every record, live and erased, and a reopened store sees all of it', async () => {
      const { store } = await created();
      const identity = await store.open();
      expect(await all(store)).toEqual([]);
      const live = [newRecord('esign-a'), newRecord('esign-b'), newRecord('esign-c')];
      for (const r of live) await store.create(r);
      const [tombstone] = await store.erase('esign-b', '2026-02-01T00:00:00.000Z', 'dpo:kim');
      const next = newRecord('esign-b');
      await store.create(next);
      const expected = byId([live[0]!, tombstone!, live[2]!, next]);
      expect(await all(store)).toEqual(expected);

      await store.close();
      const later = await reopen();
      expect(await later.open()).toEqual(identity);
      expect(await all(later)).toEqual(expected);
      expect(await later.current('esign-b')).toEqual(next);
      expect(await later.get(live[1]!.id)).toEqual(tombstone);
      expect(await later.current('esign-c')).toEqual(live[2]);
    });
  });
}
