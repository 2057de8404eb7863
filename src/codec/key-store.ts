/**
 * Where the data keys live: one key per workflow id (its "subject"), wrapped by a codec master key, so that
 * destroying it makes every payload written under it unreadable for good (crypto-shredding: docs/codec.md, "Data
 * keys and erasure"). Histories only name a data key's id; the key itself is only here. Two stores implement it: a
 * SQLite file (one machine: the dev stack, a single host) and S3 objects (every process on every machine).
 */

/** One data key, as a store keeps it. `wrapped` is gone once it is erased: the record stays, as its tombstone. */
export interface DataKeyRecord {
  /** `dk.` and 22 base64url characters; stored in clear in each payload's metadata (not secret). */
  id: string;
  /** The workflow id whose payloads it encrypts. */
  subject: string;
  /** nonce (12) ‖ AES-256-GCM of the 32-byte key under the master key, AAD `<id>\n<subject>` ‖ tag (16). */
  wrapped?: Buffer;
  /** The codec master key (ESIGN_CODEC_KEYS id) that wrapped it. */
  masterKeyId: string;
  createdAt: string;
  erasedAt?: string;
  /** Who asked the erasure (an operator's name, as `esign erase --by` gives it). */
  erasedBy?: string;
}

/** What identifies a store: written once when it is created, read at every start (a lost store is never replaced silently). */
export interface KeyStoreIdentity {
  storeId: string;
  createdAt: string;
}

export interface KeyStore {
  /** Where it is, for messages (a path, a bucket and prefix; never a secret). */
  readonly location: string;
  /** Creates the store: refused if it exists. Only for a namespace with no payloads written under data keys yet. */
  init(): Promise<KeyStoreIdentity>;
  /** Opens an existing store; throws KeyStoreMissing when it was never created here (or was lost). */
  open(): Promise<KeyStoreIdentity>;
  /** The subject's live (not erased) key, newest first, or undefined. */
  current(subject: string): Promise<DataKeyRecord | undefined>;
  /**
   * Adds a key for its subject unless a live one exists, atomically across processes: returns the key that stands
   * (the one given, or the one another process added first).
   */
  create(record: DataKeyRecord & { wrapped: Buffer }): Promise<DataKeyRecord>;
  get(id: string): Promise<DataKeyRecord | undefined>;
  /** Destroys every key of the subject (the wrapped bytes, in every copy the store holds) and keeps its tombstone. */
  erase(subject: string, erasedAt: string, erasedBy: string): Promise<DataKeyRecord[]>;
  /** Every record, for a master key's rotation (`esign keys rewrap`). */
  list(): AsyncIterable<DataKeyRecord>;
  /** Replaces a live key's wrapping (same key, another master key). */
  rewrap(id: string, wrapped: Buffer, masterKeyId: string): Promise<void>;
  close(): Promise<void>;
}

/** The store is not there: never created at this location, or lost. Its message says what to do. */
export class KeyStoreMissing extends Error {
  override readonly name = 'KeyStoreMissing';

  static at(location: string): KeyStoreMissing {
    return new KeyStoreMissing(
      `no key store at ${location}: restore it from its backup (payloads written under its keys cannot be read without it); ` +
        'create a new one with `esign keys init` only for a namespace with no data keys yet',
    );
  }
}

/** `init` on a store that exists. */
export class KeyStoreExists extends Error {
  override readonly name = 'KeyStoreExists';

  static at(location: string): KeyStoreExists {
    return new KeyStoreExists(`a key store exists at ${location}: it is never replaced (restore it from its backup)`);
  }
}
