/**
 * The key store in one SQLite file, for processes on one machine (the dev stack, a single host): every process that
 * reads or writes the workflows opens the same file (WAL, busy timeout), so a subject's key is made once for all of
 * them by a transaction that takes the write lock before it looks.
 *
 * Erasure must leave no copy of a key's wrapped bytes in the file: `secure_delete` makes SQLite overwrite what a row
 * gave up, and the write-ahead log, which still holds the pages as they were before, is checkpointed into the file and
 * truncated to nothing after each erasure. Backups of the file are beyond its reach (docs/codec.md).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { KeyStoreExists, KeyStoreMissing, type DataKeyRecord, type KeyStore, type KeyStoreIdentity } from './key-store.js';

export interface SqliteKeyStoreOptions {
  path: string;
}

/** The schema `init` writes; `open` refuses a file of another. */
const SCHEMA_VERSION = 1;
/** Records a page of `list()` reads: each page is its own short read, so a long rewrap never holds a snapshot open. */
const LIST_PAGE = 200;
const BUSY_TIMEOUT_MS = 5000;

interface Row {
  seq: number;
  id: string;
  subject: string;
  wrapped: Buffer | null;
  master_key_id: string;
  created_at: string;
  erased_at: string | null;
  erased_by: string | null;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS meta (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    store_id TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS data_keys (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    wrapped BLOB,
    master_key_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    erased_at TEXT,
    erased_by TEXT,
    CHECK ((wrapped IS NULL) = (erased_at IS NOT NULL))
  );
  -- At most one live key a subject, whatever a writer does: the guard behind create's look-then-insert.
  CREATE UNIQUE INDEX IF NOT EXISTS data_keys_live ON data_keys (subject) WHERE erased_at IS NULL;
`;

function recordOf(row: Row): DataKeyRecord {
  return {
    id: row.id,
    subject: row.subject,
    ...(row.wrapped !== null ? { wrapped: Buffer.from(row.wrapped) } : {}),
    masterKeyId: row.master_key_id,
    createdAt: row.created_at,
    ...(row.erased_at !== null ? { erasedAt: row.erased_at } : {}),
    ...(row.erased_by !== null ? { erasedBy: row.erased_by } : {}),
  };
}

export class SqliteKeyStore implements KeyStore {
  readonly location: string;
  readonly #path: string;
  #db: Database.Database | undefined;
  /** The file this process opened: one put in its place (a restore, a new init) must not take writes meant for it. */
  #ino: number | undefined;
  #identity: KeyStoreIdentity | undefined;

  constructor(options: SqliteKeyStoreOptions) {
    this.#path = options.path;
    this.location = options.path;
  }

  async init(): Promise<KeyStoreIdentity> {
    if (this.#db) throw KeyStoreExists.at(this.location);
    if (!existsSync(dirname(this.#path))) mkdirSync(dirname(this.#path), { recursive: true, mode: 0o700 });
    // Created owner-only before SQLite opens it: its -wal and -shm take the file's mode.
    closeSync(openSync(this.#path, 'a', 0o600));
    chmodSync(this.#path, 0o600);
    const db = new Database(this.#path);
    try {
      this.#configure(db);
      const identity = db
        .transaction((): KeyStoreIdentity => {
          db.exec(SCHEMA);
          const existing = db.prepare('SELECT 1 FROM meta').get();
          if (existing) throw KeyStoreExists.at(this.location);
          const made = { storeId: randomUUID(), createdAt: new Date().toISOString() };
          db.prepare('INSERT INTO meta (one, store_id, created_at) VALUES (1, ?, ?)').run(made.storeId, made.createdAt);
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
          return made;
        })
        .immediate();
      this.#ownerOnly();
      this.#db = db;
      this.#ino = statSync(this.#path).ino;
      this.#identity = identity;
      return identity;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  async open(): Promise<KeyStoreIdentity> {
    this.#opened();
    return this.#identity!;
  }

  async current(subject: string): Promise<DataKeyRecord | undefined> {
    const row = this.#opened()
      .prepare<[string], Row>('SELECT * FROM data_keys WHERE subject = ? AND erased_at IS NULL ORDER BY seq DESC LIMIT 1')
      .get(subject);
    return row ? recordOf(row) : undefined;
  }

  async create(record: DataKeyRecord & { wrapped: Buffer }): Promise<DataKeyRecord> {
    if (!Buffer.isBuffer(record.wrapped) || record.wrapped.length === 0) throw new Error(`data key "${record.id}" has no wrapped key`);
    const db = this.#forWriting();
    const live = db.prepare<[string], Row>('SELECT * FROM data_keys WHERE subject = ? AND erased_at IS NULL ORDER BY seq DESC LIMIT 1');
    const insert = db.prepare(
      'INSERT INTO data_keys (id, subject, wrapped, master_key_id, created_at) VALUES (@id, @subject, @wrapped, @masterKeyId, @createdAt)',
    );
    // IMMEDIATE: the write lock is taken before the look, so a second process waits and then finds this one's key.
    return db
      .transaction((): DataKeyRecord => {
        const standing = live.get(record.subject);
        if (standing) return recordOf(standing);
        insert.run({
          id: record.id,
          subject: record.subject,
          wrapped: record.wrapped,
          masterKeyId: record.masterKeyId,
          createdAt: record.createdAt,
        });
        return {
          id: record.id,
          subject: record.subject,
          wrapped: Buffer.from(record.wrapped),
          masterKeyId: record.masterKeyId,
          createdAt: record.createdAt,
        };
      })
      .immediate();
  }

  async get(id: string): Promise<DataKeyRecord | undefined> {
    const row = this.#opened().prepare<[string], Row>('SELECT * FROM data_keys WHERE id = ?').get(id);
    return row ? recordOf(row) : undefined;
  }

  async erase(subject: string, erasedAt: string, erasedBy: string): Promise<DataKeyRecord[]> {
    const db = this.#forWriting();
    const live = db.prepare<[string], Row>('SELECT * FROM data_keys WHERE subject = ? AND erased_at IS NULL ORDER BY seq');
    const destroy = db.prepare('UPDATE data_keys SET wrapped = NULL, erased_at = ?, erased_by = ? WHERE seq = ?');
    const erased = db
      .transaction((): DataKeyRecord[] =>
        live.all(subject).map((row) => {
          destroy.run(erasedAt, erasedBy, row.seq);
          return recordOf({ ...row, wrapped: null, erased_at: erasedAt, erased_by: erasedBy });
        }),
      )
      .immediate();
    // Also when nothing was live: an erasure whose checkpoint did not finish completes by being run again.
    this.#checkpoint(db, erased.length);
    return erased;
  }

  async *list(): AsyncIterable<DataKeyRecord> {
    const page = this.#opened().prepare<[number, number], Row>('SELECT * FROM data_keys WHERE seq > ? ORDER BY seq LIMIT ?');
    let after = 0;
    for (;;) {
      const rows = page.all(after, LIST_PAGE);
      for (const row of rows) yield recordOf(row);
      if (rows.length < LIST_PAGE) return;
      after = rows.at(-1)!.seq;
    }
  }

  async rewrap(id: string, wrapped: Buffer, masterKeyId: string): Promise<void> {
    if (!Buffer.isBuffer(wrapped) || wrapped.length === 0) throw new Error(`data key "${id}": no wrapped key to store`);
    const db = this.#forWriting();
    db.transaction(() => {
      const row = db.prepare<[string], Row>('SELECT * FROM data_keys WHERE id = ?').get(id);
      if (!row) throw new Error(`the key store (${this.location}) holds no data key "${id}"`);
      if (row.erased_at !== null) throw new Error(`data key "${id}" was erased at ${row.erased_at}: there is nothing to rewrap`);
      db.prepare('UPDATE data_keys SET wrapped = ?, master_key_id = ? WHERE seq = ? AND erased_at IS NULL').run(
        wrapped,
        masterKeyId,
        row.seq,
      );
    }).immediate();
  }

  async close(): Promise<void> {
    this.#db?.close();
    this.#db = undefined;
    this.#identity = undefined;
  }

  /**
   * The open connection, for a write: refused when the path now holds another file than the one opened (removed and
   * created again), whose keys the open connection would otherwise keep writing into a file nobody else reads.
   */
  #forWriting(): Database.Database {
    const db = this.#opened();
    if (statSync(this.#path, { throwIfNoEntry: false })?.ino !== this.#ino)
      throw new KeyStoreMissing(
        `the key store at ${this.location} was removed or replaced since this process opened it: restart the process ` +
          'against the store its payloads were written with',
      );
    return db;
  }

  /** The open connection, opening the store at first use: never creating it, so a lost file is said rather than replaced. */
  #opened(): Database.Database {
    if (this.#db) return this.#db;
    // An empty file is what an interrupted `init` leaves, or a path touched by something else: no store either.
    if (!existsSync(this.#path) || statSync(this.#path).size === 0) throw KeyStoreMissing.at(this.location);
    const db = new Database(this.#path, { fileMustExist: true });
    try {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // Read before any setting is written: a file that is not a key store is left as it was found.
      const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
      const meta = hasMeta
        ? db.prepare<[], { store_id: string; created_at: string }>('SELECT store_id, created_at FROM meta').get()
        : undefined;
      if (!meta) throw KeyStoreMissing.at(this.location);
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version !== SCHEMA_VERSION)
        throw new Error(`the key store at ${this.location} has schema ${version}; this version reads ${SCHEMA_VERSION}`);
      this.#configure(db);
      this.#ownerOnly();
      this.#db = db;
      this.#ino = statSync(this.#path).ino;
      this.#identity = { storeId: meta.store_id, createdAt: meta.created_at };
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  #configure(db: Database.Database): void {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // A setting of the connection, not of the file: each one sets it, as any of them may be the one that erases.
    db.pragma('secure_delete = ON');
    db.pragma('journal_mode = WAL');
    // A key lost to a power cut after a payload was written under it would leave that payload unreadable.
    db.pragma('synchronous = FULL');
  }

  /**
   * Copies the log into the file and truncates it: until then the log still holds the pages as they were, with the
   * erased bytes. A reader in another process can hold it up; a checkpoint that does not complete in the busy timeout
   * fails the erasure, which is complete once it is run again.
   */
  #checkpoint(db: Database.Database, erased: number): void {
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
    if (result && result.busy !== 0) {
      throw new Error(
        `${erased > 0 ? `${erased} data key(s) erased, but t` : 'T'}he key store's write-ahead log (${this.#path}-wal) could not be truncated ` +
          'while another process was reading it, and may still hold erased keys: run the erasure again',
      );
    }
  }

  #ownerOnly(): void {
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(this.#path + suffix)) chmodSync(this.#path + suffix, 0o600);
  }
}
