/**
 * Data keys: one AES-256 key per workflow id, made on first use, wrapped by the active codec master key and kept in
 * a key store (./key-store.ts). Payloads name the data key's id; erasing a workflow id's keys makes its payloads
 * unreadable for good, while the master keys go on reading everything else (docs/codec.md, "Data keys and erasure").
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { CodecKeyUnknown, PayloadUndecodable, type CodecKey } from './codec-errors.js';
import { KeyStoreMissing, type DataKeyRecord, type KeyStore } from './key-store.js';

/** Data key ids start so; a codec master key id may not (parseCodecKeys refuses it), so the two never mix. */
export const DATA_KEY_PREFIX = 'dk.';

/** The payload's data key was erased: what it encrypted is gone for good. Its message names only the key and when. */
export class PayloadErased extends PayloadUndecodable {
  override readonly name: string = 'PayloadErased';
}

/** The key store does not hold the payload's data key: the store was lost or replaced (restore it from its backup). */
export class DataKeyMissing extends PayloadUndecodable {
  override readonly name: string = 'DataKeyMissing';
}

const aad = (id: string, subject: string) => Buffer.from(`${id}\n${subject}`, 'utf8');

export class DataKeys {
  readonly #opening: () => Promise<KeyStore>;
  #opened: Promise<KeyStore> | undefined;
  readonly #active: CodecKey;
  readonly #masters: ReadonlyMap<string, Buffer>;
  /** The store's id these processes were set up with (ESIGN_KEY_STORE_ID): another store in its place is refused. */
  readonly #storeId: string | undefined;

  /**
   * `store`: the key store, or how to load it (its library is loaded only by a process that uses one). It is opened
   * at first use, never created: a store that is not there fails every use with KeyStoreMissing.
   */
  constructor(store: KeyStore | (() => Promise<KeyStore>), masters: readonly CodecKey[], options: { storeId?: string | undefined } = {}) {
    if (masters.length === 0) throw new Error('data keys need a codec master key');
    this.#opening = typeof store === 'function' ? store : () => Promise.resolve(store);
    this.#storeId = options.storeId;
    this.#active = masters[0]!;
    this.#masters = new Map(masters.map((k) => [k.id, k.key]));
  }

  /** The store, opened (once; a failed opening is tried again next time). A process calls it at start to fail early. */
  async store(): Promise<KeyStore> {
    this.#opened ??= this.#opening().then(async (store) => {
      const { storeId } = await store.open();
      if (this.#storeId !== undefined && storeId !== this.#storeId)
        throw new KeyStoreMissing(
          `the key store at ${store.location} is ${storeId}, not ${this.#storeId} (ESIGN_KEY_STORE_ID): restore the store ` +
            'its payloads were written with; a new one cannot read them',
        );
      return store;
    });
    return this.#opened.catch((err: unknown) => {
      this.#opened = undefined;
      throw err;
    });
  }

  /** The key that encrypts `subject`'s payloads: its live one, or a new one (another process may win the race: its key stands). */
  async forSubject(subject: string): Promise<{ id: string; key: Buffer }> {
    const live = await (await this.store()).current(subject);
    if (live) return { id: live.id, key: this.#unwrap(live) };
    const id = `${DATA_KEY_PREFIX}${randomBytes(16).toString('base64url')}`;
    const key = randomBytes(32);
    const stood = await (
      await this.store()
    ).create({
      id,
      subject,
      wrapped: this.wrap(key, id, subject, this.#active),
      masterKeyId: this.#active.id,
      createdAt: new Date().toISOString(),
    });
    return stood.id === id ? { id, key } : { id: stood.id, key: this.#unwrap(stood) };
  }

  /** The data key a payload names, unwrapped; refused with its reason when erased, missing, or wrapped by a master key not held. */
  async byId(id: string): Promise<Buffer> {
    const store = await this.store();
    const record = await store.get(id);
    if (!record) throw new DataKeyMissing(`the key store (${store.location}) holds no data key "${id}": restore it from its backup`);
    return this.#unwrap(record);
  }

  /** The key wrapped by `master`, bound to its id and subject (a wrapped key moved to another record does not unwrap). */
  wrap(key: Buffer, id: string, subject: string, master: CodecKey = this.#active): Buffer {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', master.key, nonce);
    cipher.setAAD(aad(id, subject));
    return Buffer.concat([nonce, cipher.update(key), cipher.final(), cipher.getAuthTag()]);
  }

  /**
   * Wraps every live key under the active master key, so that older master keys can be dropped from
   * ESIGN_CODEC_KEYS. Histories are untouched: they name data keys, not master keys. Returns how many moved.
   */
  async rewrapAll(): Promise<{ rewrapped: number; live: number; erased: number }> {
    let rewrapped = 0;
    let live = 0;
    let erased = 0;
    for await (const record of (await this.store()).list()) {
      if (!record.wrapped) {
        erased++;
        continue;
      }
      live++;
      if (record.masterKeyId === this.#active.id) continue;
      await (await this.store()).rewrap(record.id, this.wrap(this.#unwrap(record), record.id, record.subject), this.#active.id);
      rewrapped++;
    }
    return { rewrapped, live, erased };
  }

  #unwrap(record: DataKeyRecord): Buffer {
    if (!record.wrapped) throw new PayloadErased(`data key "${record.id}" was erased at ${record.erasedAt ?? 'an unknown time'}`);
    const master = this.#masters.get(record.masterKeyId);
    if (!master)
      throw new CodecKeyUnknown(`no codec key with id "${record.masterKeyId}" (set ESIGN_CODEC_KEYS): it wraps data key "${record.id}"`);
    const w = record.wrapped;
    try {
      const decipher = createDecipheriv('aes-256-gcm', master, w.subarray(0, 12));
      decipher.setAAD(aad(record.id, record.subject));
      decipher.setAuthTag(w.subarray(w.length - 16));
      return Buffer.concat([decipher.update(w.subarray(12, w.length - 16)), decipher.final()]);
    } catch (err) {
      throw new PayloadUndecodable(`data key "${record.id}" does not unwrap with codec key "${record.masterKeyId}"`, err);
    }
  }
}
