/**
 * The webhook ids the bridge has recorded in Temporal, kept in a small SQLite
 * file so that what it knows survives a restart and is shared by every bridge
 * that opens the same file.
 *
 * Why a file and not Temporal: Temporal already gives one effect per
 * notification (the transaction workflow and the inbox each keep the
 * notificationIds they took, across continue-as-new), but a replay still costs
 * a read at the provider and a signal, and once the workflow has ended a
 * replayed completion would go round the late path again. A marker workflow
 * per webhook id (REJECT_DUPLICATE) would make Temporal the store, at the cost
 * of one more workflow per webhook, each ending as "timed out" or "terminated"
 * in operators' lists; a file costs one indexed insert. Replicas on one host or
 * one volume (compose, `npm run cluster`) share it (WAL, busy timeout);
 * replicas on separate hosts each keep their own, and Temporal's dedupe stays
 * the guarantee behind all of them.
 *
 * Why it matters most with a shared secret: a Standard Webhooks request is
 * signed with its timestamp (five minutes' tolerance), a shared-secret one
 * carries nothing that ages, so a captured request could be replayed forever.
 * Here an id seen within the replay window is a redelivery (answered as a
 * duplicate, no second signal); one first seen before the window is a replay
 * (refused as unauthenticated). Ids are forgotten after the retention period.
 *
 * The file holds webhook ids only (UUIDs and times): no secret, no payload.
 * It is still created 0600 in a 0700 directory, as every data file is.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

export type ReplayVerdict = 'new' | 'duplicate' | 'replayed';

export interface ReplayStore {
  /** `new` (never recorded), `duplicate` (recorded within the window) or `replayed` (recorded before it). */
  check(id: string, now?: number): ReplayVerdict;
  /** Records an id once its notification is in Temporal (the first time is kept). */
  record(id: string, now?: number): void;
  close(): void;
}

export interface ReplayStoreOptions {
  file: string;
  windowMs: number;
  retentionMs: number;
}

/** Creates `file` (and its -wal and -shm) readable by this user only. */
function ownerOnly(file: string): void {
  if (!existsSync(dirname(file))) mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
}

export function openReplayStore(options: ReplayStoreOptions): ReplayStore {
  ownerOnly(options.file);
  const db = new Database(options.file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE IF NOT EXISTS webhook_ids (id TEXT PRIMARY KEY, first_seen_ms INTEGER NOT NULL) WITHOUT ROWID');
  for (const suffix of ['-wal', '-shm']) if (existsSync(options.file + suffix)) chmodSync(options.file + suffix, 0o600);
  const get = db.prepare<[string], { first_seen_ms: number }>('SELECT first_seen_ms FROM webhook_ids WHERE id = ?');
  const put = db.prepare('INSERT OR IGNORE INTO webhook_ids (id, first_seen_ms) VALUES (?, ?)');
  const prune = db.prepare('DELETE FROM webhook_ids WHERE first_seen_ms < ?');
  let lastPrune = 0;
  return {
    check(id, now = Date.now()) {
      const row = get.get(id);
      if (!row) return 'new';
      return now - row.first_seen_ms <= options.windowMs ? 'duplicate' : 'replayed';
    },
    record(id, now = Date.now()) {
      put.run(id, now);
      if (now - lastPrune > 60_000) {
        lastPrune = now;
        prune.run(now - options.retentionMs);
      }
    },
    close() {
      db.close();
    },
  };
}
