import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { DeliveryRecord } from '../../../src/client/sandbox-control.js';
import type { CreateTransactionRequest } from '../../../src/esign/schemas.js';
import { EvidenceTables } from './evidence-store.js';

export interface UploadRow {
  storagePath: string;
  docId: string;
  org: string;
  fileName: string;
  bytes: number;
  sha256: string;
  /** Width and height of each page, in PDF points. */
  pageSizes: [number, number][];
  createdAt: string;
}

/** The stored transaction body: the latest create or update request, as validated. */
export type TransactionBody = CreateTransactionRequest;

export interface TransactionRow {
  id: string;
  esignId: string;
  org: string;
  status: string;
  body: TransactionBody;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  /** Bytes and SHA-256 of the completed ZIP, once completed. */
  zipBytes: number | null;
  zipSha256: string | null;
}

export interface AppliedTagRow {
  transactionId: string;
  docIndex: number;
  tagIndex: number;
  participantId: string;
  value: string;
  appliedAt: string;
}

export interface ParticipantProgress {
  status: 'viewed' | 'signed' | 'declined';
  /** When the participant reached `status`. */
  at: string;
  viewedAt?: string;
  /** Why a participant declined, in their words. */
  reason?: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS uploads (
  storage_path TEXT PRIMARY KEY, doc_id TEXT NOT NULL, org TEXT NOT NULL, file_name TEXT NOT NULL,
  bytes INTEGER NOT NULL, sha256 TEXT NOT NULL, page_sizes TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transactions (
  id TEXT PRIMARY KEY, esign_id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, status TEXT NOT NULL,
  body TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, completed_at TEXT,
  zip_bytes INTEGER, zip_sha256 TEXT, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS transactions_by_org_status ON transactions (org, status, seq);
CREATE INDEX IF NOT EXISTS transactions_by_org ON transactions (org, seq);
CREATE TABLE IF NOT EXISTS applied_tags (
  transaction_id TEXT NOT NULL, doc_index INTEGER NOT NULL, tag_index INTEGER NOT NULL,
  participant_id TEXT NOT NULL, value TEXT NOT NULL, applied_at TEXT NOT NULL,
  PRIMARY KEY (transaction_id, doc_index, tag_index));
CREATE TABLE IF NOT EXISTS finished_participants (
  transaction_id TEXT NOT NULL, participant_id TEXT NOT NULL, finished_at TEXT NOT NULL,
  PRIMARY KEY (transaction_id, participant_id));
CREATE TABLE IF NOT EXISTS used_signing_links (jti TEXT PRIMARY KEY, used_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS viewed_participants (
  transaction_id TEXT NOT NULL, participant_id TEXT NOT NULL, viewed_at TEXT NOT NULL,
  PRIMARY KEY (transaction_id, participant_id));
CREATE TABLE IF NOT EXISTS declined_participants (
  transaction_id TEXT NOT NULL, participant_id TEXT NOT NULL, reason TEXT, declined_at TEXT NOT NULL,
  PRIMARY KEY (transaction_id, participant_id));
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT, notification_id TEXT NOT NULL, url TEXT NOT NULL, payload TEXT NOT NULL,
  status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL,
  last_error TEXT, created_at INTEGER NOT NULL, delivered_at INTEGER);
CREATE INDEX IF NOT EXISTS deliveries_due ON webhook_deliveries (status, next_attempt_at);
`;

interface TransactionRecordRaw {
  id: string;
  esign_id: string;
  org: string;
  status: string;
  body: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  zip_bytes: number | null;
  zip_sha256: string | null;
}

function toTransaction(r: TransactionRecordRaw): TransactionRow {
  return {
    id: r.id,
    esignId: r.esign_id,
    org: r.org,
    status: r.status,
    body: JSON.parse(r.body) as TransactionBody,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    zipBytes: r.zip_bytes,
    zipSha256: r.zip_sha256,
  };
}

interface DeliveryRaw {
  id: number;
  notification_id: string;
  url: string;
  payload: string;
  status: DeliveryRecord['status'];
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

function toDelivery(r: DeliveryRaw): DeliveryRecord {
  return {
    id: r.id,
    notificationId: r.notification_id,
    url: r.url,
    payload: r.payload,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
  };
}

/**
 * The sandbox's persistent state: SQLite (WAL) for records, files on disk for
 * PDFs and ZIPs. Every multi-row change runs in one SQLite transaction, so a
 * failure never leaves anything half-written.
 */
export class SandboxStore {
  readonly #db: Database.Database;
  readonly filesDir: string;
  /** The audit trail, the outbox of sent messages and signer authentication state. */
  readonly evidence: EvidenceTables;
  /** Where the sandbox's CA and sealing keys live (generated on first start). */
  readonly pkiDir: string;

  constructor(dataDir: string) {
    // The database holds the JWT and webhook secrets and signers' passwords: readable by this user only. Directories
    // the sandbox creates are 0700 (one that already exists is the operator's, left as it is); the file is created
    // 0600 before SQLite opens it, an existing one is narrowed to 0600, and SQLite gives its -wal and -shm the
    // database's mode (narrowed here too, for files left by an older version).
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.filesDir = join(dataDir, 'files');
    this.pkiDir = join(dataDir, 'pki');
    mkdirSync(this.filesDir, { recursive: true, mode: 0o700 });
    const file = join(dataDir, 'sandbox.sqlite');
    closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
    this.#db = new Database(file);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(SCHEMA);
    for (const companion of [`${file}-wal`, `${file}-shm`]) if (existsSync(companion)) chmodSync(companion, 0o600);
    this.evidence = new EvidenceTables(this.#db);
  }

  close(): void {
    this.#db.close();
  }

  // Where files live: uploads by StoragePath, completed work by transaction id.

  uploadPath(storagePath: string): string {
    return join(this.filesDir, 'uploads', ...storagePath.split('/'));
  }

  /** Scratch space for stamping a transaction's documents. */
  completedDir(transactionId: string): string {
    return join(this.filesDir, 'completed', transactionId);
  }

  completedZipPath(transactionId: string): string {
    return join(this.filesDir, 'completed', `${transactionId}.zip`);
  }

  transaction<T>(fn: () => T): T {
    return this.#db.transaction(fn)();
  }

  getMeta(key: string): string | undefined {
    const row = this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  /** Stores `value` unless the key already has one; returns the value that is kept. */
  ensureMeta(key: string, value: string): string {
    this.#db.prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)').run(key, value);
    return this.getMeta(key)!;
  }

  insertUpload(u: UploadRow): void {
    this.#db
      .prepare(
        `INSERT INTO uploads (storage_path, doc_id, org, file_name, bytes, sha256, page_sizes, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(u.storagePath, u.docId, u.org, u.fileName, u.bytes, u.sha256, JSON.stringify(u.pageSizes), u.createdAt);
  }

  getUpload(storagePath: string, org: string): UploadRow | undefined {
    const r = this.#db.prepare('SELECT * FROM uploads WHERE storage_path = ? AND org = ?').get(storagePath, org) as
      | {
          storage_path: string;
          doc_id: string;
          org: string;
          file_name: string;
          bytes: number;
          sha256: string;
          page_sizes: string;
          created_at: string;
        }
      | undefined;
    if (!r) return undefined;
    return {
      storagePath: r.storage_path,
      docId: r.doc_id,
      org: r.org,
      fileName: r.file_name,
      bytes: r.bytes,
      sha256: r.sha256,
      pageSizes: JSON.parse(r.page_sizes) as [number, number][],
      createdAt: r.created_at,
    };
  }

  insertTransaction(t: Omit<TransactionRow, 'completedAt' | 'zipBytes' | 'zipSha256'>): void {
    this.#db
      .prepare(
        `INSERT INTO transactions (id, esign_id, org, status, body, created_at, updated_at, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transactions))`,
      )
      .run(t.id, t.esignId, t.org, t.status, JSON.stringify(t.body), t.createdAt, t.updatedAt);
  }

  getTransaction(id: string): TransactionRow | undefined {
    const r = this.#db.prepare('SELECT * FROM transactions WHERE id = ?').get(id) as TransactionRecordRaw | undefined;
    return r && toTransaction(r);
  }

  getTransactionByEsignId(esignId: string): TransactionRow | undefined {
    const r = this.#db.prepare('SELECT * FROM transactions WHERE esign_id = ?').get(esignId) as TransactionRecordRaw | undefined;
    return r && toTransaction(r);
  }

  updateTransaction(id: string, fields: { status?: string; body?: TransactionBody; updatedAt: string }): void {
    const current = this.getTransaction(id);
    if (!current) return;
    this.#db
      .prepare('UPDATE transactions SET status = ?, body = ?, updated_at = ? WHERE id = ?')
      .run(fields.status ?? current.status, JSON.stringify(fields.body ?? current.body), fields.updatedAt, id);
  }

  completeTransaction(id: string, completedAt: string, zip: { bytes: number; sha256: string }): void {
    this.#db
      .prepare(`UPDATE transactions SET status = 'completed', completed_at = ?, updated_at = ?, zip_bytes = ?, zip_sha256 = ? WHERE id = ?`)
      .run(completedAt, completedAt, zip.bytes, zip.sha256, id);
  }

  /** Transactions still out for signature, across organizations. */
  pendingTransactions(): TransactionRow[] {
    return (this.#db.prepare(`SELECT * FROM transactions WHERE status = 'esign_pending'`).all() as TransactionRecordRaw[]).map(
      toTransaction,
    );
  }

  listTransactions(org: string, status: string | undefined, limit: number, offset: number): { rows: TransactionRow[]; total: number } {
    const where = status === undefined ? 'org = ?' : 'org = ? AND status = ?';
    const params = status === undefined ? [org] : [org, status];
    const total = (this.#db.prepare(`SELECT COUNT(*) AS n FROM transactions WHERE ${where}`).get(...params) as { n: number }).n;
    const rows = this.#db
      .prepare(`SELECT * FROM transactions WHERE ${where} ORDER BY seq DESC LIMIT ? OFFSET ?`)
      .all(...params, limit, offset) as TransactionRecordRaw[];
    return { rows: rows.map(toTransaction), total };
  }

  appliedTags(transactionId: string): AppliedTagRow[] {
    return (
      this.#db.prepare('SELECT * FROM applied_tags WHERE transaction_id = ?').all(transactionId) as {
        transaction_id: string;
        doc_index: number;
        tag_index: number;
        participant_id: string;
        value: string;
        applied_at: string;
      }[]
    ).map((r) => ({
      transactionId: r.transaction_id,
      docIndex: r.doc_index,
      tagIndex: r.tag_index,
      participantId: r.participant_id,
      value: r.value,
      appliedAt: r.applied_at,
    }));
  }

  applyTag(t: AppliedTagRow): void {
    this.#db
      .prepare(
        `INSERT INTO applied_tags (transaction_id, doc_index, tag_index, participant_id, value, applied_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (transaction_id, doc_index, tag_index) DO UPDATE SET value = excluded.value, applied_at = excluded.applied_at`,
      )
      .run(t.transactionId, t.docIndex, t.tagIndex, t.participantId, t.value, t.appliedAt);
  }

  clearSigning(transactionId: string): void {
    this.#db.prepare('DELETE FROM applied_tags WHERE transaction_id = ?').run(transactionId);
    this.#db.prepare('DELETE FROM finished_participants WHERE transaction_id = ?').run(transactionId);
    this.#db.prepare('DELETE FROM declined_participants WHERE transaction_id = ?').run(transactionId);
    this.#db.prepare('DELETE FROM viewed_participants WHERE transaction_id = ?').run(transactionId);
  }

  /**
   * A correction of a transaction some have signed (./corrections.ts): their finished rows and applied tags (at their
   * new positions) stay, and everyone else's progress goes.
   */
  keepSigning(transactionId: string, signed: ReadonlySet<string>, applied: readonly AppliedTagRow[]): void {
    const others = (table: string) =>
      this.#db
        .prepare(`SELECT participant_id FROM ${table} WHERE transaction_id = ?`)
        .all(transactionId)
        .map((r) => (r as { participant_id: string }).participant_id)
        .filter((id) => !signed.has(id));
    for (const table of ['finished_participants', 'declined_participants', 'viewed_participants'])
      for (const id of others(table))
        this.#db.prepare(`DELETE FROM ${table} WHERE transaction_id = ? AND participant_id = ?`).run(transactionId, id);
    this.#db.prepare('DELETE FROM applied_tags WHERE transaction_id = ?').run(transactionId);
    for (const a of applied) this.applyTag(a);
  }

  declineParticipant(transactionId: string, participantId: string, reason: string | undefined, at: string): void {
    this.#db
      .prepare('INSERT OR IGNORE INTO declined_participants (transaction_id, participant_id, reason, declined_at) VALUES (?, ?, ?, ?)')
      .run(transactionId, participantId, reason ?? null, at);
  }

  /** Uses up a single-use signing link; false when it was used before. */
  useSigningLink(jti: string, at: string): boolean {
    return this.#db.prepare('INSERT OR IGNORE INTO used_signing_links (jti, used_at) VALUES (?, ?)').run(jti, at).changes === 1;
  }

  /** Records a participant's first look at the signing page; true the first time. */
  markViewed(transactionId: string, participantId: string, at: string): boolean {
    return (
      this.#db
        .prepare('INSERT OR IGNORE INTO viewed_participants (transaction_id, participant_id, viewed_at) VALUES (?, ?, ?)')
        .run(transactionId, participantId, at).changes === 1
    );
  }

  /** Who has viewed, signed or declined, and when; participants not listed are pending. */
  participantProgress(transactionId: string): Map<string, ParticipantProgress> {
    const progress = new Map<string, ParticipantProgress>();
    const viewed = this.#db
      .prepare('SELECT participant_id, viewed_at FROM viewed_participants WHERE transaction_id = ?')
      .all(transactionId) as { participant_id: string; viewed_at: string }[];
    for (const r of viewed) progress.set(r.participant_id, { status: 'viewed', at: r.viewed_at, viewedAt: r.viewed_at });
    const signed = this.#db
      .prepare('SELECT participant_id, finished_at FROM finished_participants WHERE transaction_id = ?')
      .all(transactionId) as { participant_id: string; finished_at: string }[];
    for (const r of signed) progress.set(r.participant_id, { ...progress.get(r.participant_id), status: 'signed', at: r.finished_at });
    const declined = this.#db
      .prepare('SELECT participant_id, reason, declined_at FROM declined_participants WHERE transaction_id = ?')
      .all(transactionId) as { participant_id: string; reason: string | null; declined_at: string }[];
    for (const r of declined)
      progress.set(r.participant_id, { status: 'declined', at: r.declined_at, ...(r.reason ? { reason: r.reason } : {}) });
    return progress;
  }

  finishedParticipants(transactionId: string): Set<string> {
    const rows = this.#db.prepare('SELECT participant_id FROM finished_participants WHERE transaction_id = ?').all(transactionId) as {
      participant_id: string;
    }[];
    return new Set(rows.map((r) => r.participant_id));
  }

  finishParticipant(transactionId: string, participantId: string, at: string): void {
    this.#db
      .prepare('INSERT OR IGNORE INTO finished_participants (transaction_id, participant_id, finished_at) VALUES (?, ?, ?)')
      .run(transactionId, participantId, at);
  }

  enqueueDelivery(d: { notificationId: string; url: string; payload: string; now: number }): void {
    this.#db
      .prepare(
        `INSERT INTO webhook_deliveries (notification_id, url, payload, status, next_attempt_at, created_at)
         VALUES (?, ?, ?, 'pending', ?, ?)`,
      )
      .run(d.notificationId, d.url, d.payload, d.now, d.now);
  }

  dueDeliveries(now: number, limit: number): DeliveryRecord[] {
    return (
      this.#db
        .prepare(`SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`)
        .all(now, limit) as DeliveryRaw[]
    ).map(toDelivery);
  }

  nextDeliveryAt(): number | undefined {
    const r = this.#db.prepare(`SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'`).get() as {
      at: number | null;
    };
    return r.at ?? undefined;
  }

  recordAttempt(
    id: number,
    outcome: { status: DeliveryRecord['status']; nextAttemptAt?: number; error?: string | null; deliveredAt?: number },
  ): void {
    this.#db
      .prepare(
        `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = COALESCE(?, next_attempt_at),
         last_error = ?, delivered_at = ? WHERE id = ?`,
      )
      .run(outcome.status, outcome.nextAttemptAt ?? null, outcome.error ?? null, outcome.deliveredAt ?? null, id);
  }

  /** How many uploads and transactions exist, across organizations. */
  counts(): { uploads: number; transactions: number } {
    const n = (table: 'uploads' | 'transactions') => (this.#db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { uploads: n('uploads'), transactions: n('transactions') };
  }

  listDeliveries(filter: { notificationId?: string; transactionId?: string } = {}): DeliveryRecord[] {
    let rows: DeliveryRaw[];
    if (filter.notificationId) {
      rows = this.#db
        .prepare('SELECT * FROM webhook_deliveries WHERE notification_id = ? ORDER BY id')
        .all(filter.notificationId) as DeliveryRaw[];
    } else if (filter.transactionId) {
      rows = this.#db
        .prepare(`SELECT * FROM webhook_deliveries WHERE json_extract(payload, '$.data.transaction_id') = ? ORDER BY id`)
        .all(filter.transactionId) as DeliveryRaw[];
    } else {
      rows = this.#db.prepare('SELECT * FROM webhook_deliveries ORDER BY id DESC LIMIT 500').all() as DeliveryRaw[];
    }
    return rows.map(toDelivery);
  }
}
