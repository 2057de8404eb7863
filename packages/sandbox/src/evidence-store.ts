import type Database from 'better-sqlite3';
import type { MessageRecord } from '../../../src/client/sandbox-control.js';
import type { AuditEvent, AuditEventType } from '../../../src/esign/evidence.js';

/** Per participant: failed authentication attempts, lock-out, and the pending one-time code (hashed). */
export interface AuthStateRow {
  failures: number;
  lockedUntil: string | null;
  codeHash: string | null;
  codeExpiresAt: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS audit_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, transaction_id TEXT NOT NULL, at TEXT NOT NULL, type TEXT NOT NULL,
  participant_id TEXT, ip TEXT, user_agent TEXT, detail TEXT);
CREATE INDEX IF NOT EXISTS audit_by_transaction ON audit_events (transaction_id, seq);
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, transaction_id TEXT NOT NULL, participant_id TEXT NOT NULL, channel TEXT NOT NULL,
  recipient TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_by_transaction ON messages (transaction_id, kind);
CREATE TABLE IF NOT EXISTS auth_state (
  transaction_id TEXT NOT NULL, participant_id TEXT NOT NULL, failures INTEGER NOT NULL DEFAULT 0, locked_until TEXT,
  code_hash TEXT, code_expires_at TEXT, PRIMARY KEY (transaction_id, participant_id));
CREATE TABLE IF NOT EXISTS session_auth (
  session_jti TEXT NOT NULL, participant_id TEXT NOT NULL, step TEXT NOT NULL, passed_at TEXT NOT NULL,
  PRIMARY KEY (session_jti, participant_id, step));
`;

/**
 * The sandbox's evidence tables, beside the transaction tables in the same
 * SQLite file (so an audit event commits with the change it records): the
 * audit trail, the outbox of sent messages, and signer authentication state.
 */
export class EvidenceTables {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    db.exec(SCHEMA);
  }

  audit(transactionId: string, e: Omit<AuditEvent, 'seq'>): void {
    this.#db
      .prepare('INSERT INTO audit_events (transaction_id, at, type, participant_id, ip, user_agent, detail) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(
        transactionId,
        e.at,
        e.type,
        e.participantId ?? null,
        e.ip ?? null,
        e.userAgent ?? null,
        e.detail ? JSON.stringify(e.detail) : null,
      );
  }

  auditTrail(transactionId: string): AuditEvent[] {
    const rows = this.#db
      .prepare('SELECT seq, at, type, participant_id, ip, user_agent, detail FROM audit_events WHERE transaction_id = ? ORDER BY seq')
      .all(transactionId) as {
      seq: number;
      at: string;
      type: AuditEventType;
      participant_id: string | null;
      ip: string | null;
      user_agent: string | null;
      detail: string | null;
    }[];
    return rows.map((r) => ({
      seq: r.seq,
      at: r.at,
      type: r.type,
      ...(r.participant_id ? { participantId: r.participant_id } : {}),
      ...(r.ip ? { ip: r.ip } : {}),
      ...(r.user_agent ? { userAgent: r.user_agent } : {}),
      ...(r.detail ? { detail: JSON.parse(r.detail) as Record<string, string | number | boolean> } : {}),
    }));
  }

  sendMessage(m: Omit<MessageRecord, 'id'>): void {
    this.#db
      .prepare(
        'INSERT INTO messages (transaction_id, participant_id, channel, recipient, kind, subject, body, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(m.transactionId, m.participantId, m.channel, m.to, m.kind, m.subject, m.body, m.sentAt);
  }

  /** Newest first; filtered by recipient and/or transaction. */
  messages(filter: { to?: string; transactionId?: string; limit?: number } = {}): MessageRecord[] {
    const rows = this.#db
      .prepare(
        `SELECT id, transaction_id, participant_id, channel, recipient, kind, subject, body, sent_at FROM messages
         WHERE (@to IS NULL OR lower(recipient) = lower(@to)) AND (@tx IS NULL OR transaction_id = @tx) ORDER BY id DESC LIMIT @limit`,
      )
      .all({ to: filter.to ?? null, tx: filter.transactionId ?? null, limit: filter.limit ?? 100 }) as {
      id: number;
      transaction_id: string;
      participant_id: string;
      channel: MessageRecord['channel'];
      recipient: string;
      kind: MessageRecord['kind'];
      subject: string;
      body: string;
      sent_at: string;
    }[];
    return rows.map((r) => ({
      id: r.id,
      transactionId: r.transaction_id,
      participantId: r.participant_id,
      channel: r.channel,
      to: r.recipient,
      kind: r.kind,
      subject: r.subject,
      body: r.body,
      sentAt: r.sent_at,
    }));
  }

  /** The participants of a transaction who have been sent an invitation. */
  invited(transactionId: string): Set<string> {
    const rows = this.#db
      .prepare("SELECT DISTINCT participant_id FROM messages WHERE transaction_id = ? AND kind = 'invitation'")
      .all(transactionId) as { participant_id: string }[];
    return new Set(rows.map((r) => r.participant_id));
  }

  authState(transactionId: string, participantId: string): AuthStateRow {
    const row = this.#db
      .prepare('SELECT failures, locked_until, code_hash, code_expires_at FROM auth_state WHERE transaction_id = ? AND participant_id = ?')
      .get(transactionId, participantId) as
      { failures: number; locked_until: string | null; code_hash: string | null; code_expires_at: string | null } | undefined;
    return {
      failures: row?.failures ?? 0,
      lockedUntil: row?.locked_until ?? null,
      codeHash: row?.code_hash ?? null,
      codeExpiresAt: row?.code_expires_at ?? null,
    };
  }

  setAuthState(transactionId: string, participantId: string, s: AuthStateRow): void {
    this.#db
      .prepare(
        `INSERT INTO auth_state (transaction_id, participant_id, failures, locked_until, code_hash, code_expires_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (transaction_id, participant_id) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until,
           code_hash = excluded.code_hash, code_expires_at = excluded.code_expires_at`,
      )
      .run(transactionId, participantId, s.failures, s.lockedUntil, s.codeHash, s.codeExpiresAt);
  }

  passStep(sessionJti: string, participantId: string, step: string, at: string): void {
    this.#db
      .prepare('INSERT OR IGNORE INTO session_auth (session_jti, participant_id, step, passed_at) VALUES (?, ?, ?, ?)')
      .run(sessionJti, participantId, step, at);
  }

  passedSteps(sessionJti: string, participantId: string): Set<string> {
    const rows = this.#db
      .prepare('SELECT step FROM session_auth WHERE session_jti = ? AND participant_id = ?')
      .all(sessionJti, participantId) as { step: string }[];
    return new Set(rows.map((r) => r.step));
  }
}
