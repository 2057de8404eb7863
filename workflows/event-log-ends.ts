/** When an integrator's event log (workflows/event-log.ts) has ended, and so may close after its retention. */
import type { LoggedEvent } from '../src/definitions/event-log.js';
import type { IntegratorEvent } from '../src/definitions/transaction.js';

/** The events that end a transaction. */
const ENDS = new Set<IntegratorEvent['type']>([
  'transaction.completed',
  'transaction.declined',
  'transaction.cancelled',
  'transaction.expired',
  'transaction.deleted',
]);

/**
 * Every transaction the log names has ended. Each event's key starts with its provider transaction's id (the
 * referenceId, for one never created), and each of those has an end event: a referenceId used again for a later
 * transaction opens the log again until that one ends too. A late completion ends its transaction as its end did.
 */
export function everyTransactionEnded(events: readonly Pick<LoggedEvent, 'key' | 'type'>[]): boolean {
  const named = new Set<string>();
  const ended = new Set<string>();
  for (const e of events) {
    const transaction = e.key.slice(0, Math.max(0, e.key.indexOf(':')));
    named.add(transaction);
    if (ENDS.has(e.type) || e.type === 'transaction.completed_late') ended.add(transaction);
  }
  return ended.size > 0 && [...named].every((t) => ended.has(t));
}
