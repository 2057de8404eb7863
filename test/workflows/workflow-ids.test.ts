// Every workflow's id has one form, and no referenceId a caller may choose
// makes a transaction's id another workflow's: a transaction `events-X` would
// otherwise be `esign-events-X`, transaction X's event log, and X's events
// would be signalled to the wrong workflow.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { referenceOf } from '../../src/bulk/rows.js';
import { EVIDENCE_UPKEEP_WORKFLOW_ID } from '../../src/definitions/evidence-upkeep.js';
import { eventLogIdFor } from '../../src/definitions/event-log.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';
import { lateCompletionIdFor } from '../../src/definitions/late-completion.js';
import { LEGAL_HOLDS_WORKFLOW_ID, RECORDS_RETENTION_WORKFLOW_ID } from '../../src/definitions/records.js';
import { workflowIdFor } from '../../src/definitions/transaction.js';
import { EsignTransactionInput, REFERENCE_ID } from '../../src/transaction/input.js';
import { seededRandom } from '../../src/util/seeded-random.js';

/** What the schema says about a referenceId (the rest of the input does not matter here). */
const referenceIssues = (referenceId: string) =>
  (EsignTransactionInput.safeParse({ referenceId }).error?.issues ?? []).filter((i) => i.path[0] === 'referenceId').map((i) => i.message);

describe('referenceIds that would take another workflow id', () => {
  const transactionId = randomUUID();
  const taken: [string, string][] = [
    [`events-ref-1`, eventLogIdFor('ref-1')],
    [`inbox-${transactionId}`, inboxIdFor(transactionId)],
    [`late-${transactionId}`, lateCompletionIdFor(transactionId)],
    ['evidence-upkeep', EVIDENCE_UPKEEP_WORKFLOW_ID],
    ['legal-holds', LEGAL_HOLDS_WORKFLOW_ID],
    ['records-retention', RECORDS_RETENTION_WORKFLOW_ID],
  ];
  it.each(taken)('refuses %s, whose transaction id would be %s', (referenceId, other) => {
    expect(workflowIdFor(referenceId)).toBe(other); // the collision the rule prevents
    expect(referenceIssues(referenceId)).toEqual([
      expect.stringMatching(/not starting with events-, inbox-, late-, evidence-upkeep, legal-holds or records-retention/),
    ]);
    // A bulk row naming it is refused with the same reason.
    const row = referenceOf('bulk-x', { line: 2, cells: { referenceId } });
    expect('reason' in row && row.reason).toMatch(/not starting with events-/);
  });

  it('still accepts ids that only look alike', () => {
    for (const ok of ['Events-1', 'eventsX', 'my-events-1', 'late', 'inbox', 'evidence-upkee']) {
      expect(referenceIssues(ok), ok).toEqual([]);
    }
  });

  it('no accepted referenceId gives a transaction id equal to any other workflow id (seeded sample)', () => {
    const random = seededRandom(38);
    const alphabet = 'abcdefghijklmnopqrstuvwxyzEIL0123456789._:-';
    const pick = () => alphabet[Math.floor(random() * alphabet.length)]!;
    const prefixes = ['', 'events-', 'inbox-', 'late-', 'evidence-upkeep', 'events', 'e'];
    for (let i = 0; i < 5_000; i++) {
      const tail = Array.from({ length: 1 + Math.floor(random() * 12) }, pick).join('');
      const ref = prefixes[i % prefixes.length]! + tail;
      if (!REFERENCE_ID.test(ref)) continue;
      const id = workflowIdFor(ref);
      for (const prefix of ['esign-events-', 'esign-inbox-', 'esign-late-']) expect(id.startsWith(prefix), ref).toBe(false);
      expect(id).not.toBe(EVIDENCE_UPKEEP_WORKFLOW_ID);
    }
  });
});
