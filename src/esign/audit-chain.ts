// The audit trail's hash chain (format esign-audit-trail/v2): each event names
// the hash of the one before it, so no event can be changed, dropped, inserted
// or reordered without every later hash changing; the last hash (the head) is
// printed on the sealed certificate of completion, which also carries the whole
// trail as an embedded file. Written by the sandbox, checked by the archive,
// and specified for anyone to check in docs/evidence.md:
//
//   genesis  = SHA-256("esign-audit-trail/v2\n" + transaction id), hex
//   hash(e)  = SHA-256(JCS(e without "hash")), hex, where e.prev is the
//              previous event's hash (the genesis for the first event) and
//              JCS is the JSON Canonicalization Scheme (RFC 8785)
//   seq      = 1, 2, 3, ... in order
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { AuditEvent } from './evidence.js';

// RFC 8785 by its authors' reference implementation; a CommonJS module whose typings claim an ES default export.
const canonicalize = createRequire(import.meta.url)('canonicalize') as (input: unknown) => string | undefined;

const hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The value the first event's `prev` names: bound to the transaction, so a chain cannot be moved to another. */
export function chainGenesis(transactionId: string): string {
  return hex(`esign-audit-trail/v2\n${transactionId}`);
}

function eventHash(event: Omit<AuditEvent, 'hash'>): string {
  const text = canonicalize(event);
  if (text === undefined) throw new Error('an audit event cannot be canonicalized');
  return hex(text);
}

/** Numbers the events 1..n in their order and links each to the one before: the trail's `events` and its `head`. */
export function chainEvents(
  transactionId: string,
  events: readonly Omit<AuditEvent, 'seq' | 'prev' | 'hash'>[],
): { events: AuditEvent[]; head: string } {
  let prev = chainGenesis(transactionId);
  const chained = events.map((e, i) => {
    const linked = { ...e, seq: i + 1, prev };
    prev = eventHash(linked);
    return { ...linked, hash: prev };
  });
  return { events: chained, head: prev };
}

/** Why a trail's chain does not hold (the first break found), or null when every link and the head hold. */
export function chainProblem(transactionId: string, events: readonly AuditEvent[], head: string): string | null {
  let prev = chainGenesis(transactionId);
  for (const [i, e] of events.entries()) {
    if (e.seq !== i + 1) return `audit event ${i + 1} is numbered ${e.seq}`;
    if (e.prev !== prev) return `audit event ${e.seq} does not follow the one before it (prev ${e.prev ?? 'missing'})`;
    const { hash, ...rest } = e;
    const expected = eventHash(rest);
    if (hash !== expected)
      return `audit event ${e.seq} has been altered (its hash is ${hash ?? 'missing'}, its content hashes to ${expected})`;
    prev = expected;
  }
  if (head !== prev) return `the audit trail's head ${head} is not its last event's hash ${prev}`;
  return null;
}
