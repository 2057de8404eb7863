// Committed histories of the workflows' paths, in a folder per workflow code version that recorded them: each released
// version's, and the current version's (`npm run replay:regenerate` and the recorders named below write those). Each
// replays against its own version's code, taken from git for a released one (test/support/code-versions.ts): a pinned
// transaction or bulk send never runs on other code. The workflows that follow the current version (AUTO_UPGRADE)
// replay against today's code as well, since their open runs move to it: a change that breaks one of those needs
// `patched` (docs/decisions/versioning-policy.md).
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { CURRENT_VERSION, RELEASED_VERSIONS, workflowsPathOf } from '../support/code-versions.js';

const dir = fileURLToPath(new URL('../replay/histories/', import.meta.url));

/** The transaction's ends, recorded by `npm run replay:regenerate`. */
const TRANSACTION_PATHS = [
  'cancel-refused-then-completed.json',
  'cancelled.json',
  'completed-by-reconciliation.json',
  'completed-by-webhook.json',
  'declined.json',
  'draft-sent-then-completed.json',
  'expired.json',
  'overdue-then-completed.json',
  'provider-cancelled.json',
];
/**
 * Also by `npm run replay:regenerate`: two runs joined by continue-as-new; a run pinned to v1 handed over when v2
 * became current (run 1, on v1), finished on v2 (run 2); participant progress, a reminder and the integrator's events;
 * the upload's SHA-256 passed to the archive and the evidence it recorded; a signing URL asked with the start, while
 * the transaction is created (local activities, one at a time); a refused archive retried by an operator; a replace
 * before a cancel; a completion of an earlier transaction of a reused referenceId, handed to the late path.
 */
const LIFECYCLE_PATHS = [
  'continued-as-new-1.json',
  'continued-as-new-2.json',
  'upgraded-at-continue-as-new-1.json',
  'upgraded-at-continue-as-new-2.json',
  'progress-reminders-and-events.json',
  'completed-with-evidence.json',
  'signing-url-with-start.json',
  'archive-refused-then-retried.json',
  'replace-then-cancel.json',
  'stray-completion.json',
];
/**
 * A provider that fails or refuses (test/workflows/provider-refusals.test.ts, test/workflows/replace-refused-window.test.ts record them):
 * reminders whose signing URL keeps failing, then signed; a deletion confirmed by a 404; a cancel after a replace whose
 * first attempt was given up on and landed after the withdraw; a deletion whose webhook was lost, then 404s for long
 * enough to confirm it; a cancel whose withdraw meets a 404 that the read after it confirms; a replace refused (422)
 * on its retry, then a cancel whose withdraw waits past the refused replace's window and withdraws again; a 404, a
 * withdraw the provider answers, and a 404 again, which ends nothing.
 */
const REFUSAL_PATHS = [
  'reminder-url-failing-then-completed.json',
  'deleted-confirmed-by-404.json',
  'replace-lands-after-withdraw.json',
  'status-reads-down-cancel-refused-then-completed.json',
  'deleted-webhook-lost-then-404-twice.json',
  'cancel-withdraw-404-then-404-again.json',
  'replace-refused-lands-after-withdraw.json',
  'withdraw-answer-between-two-404s.json',
];
/** Corrections in flight (test/workflows/corrections.test.ts, RECORD_REFUSAL_HISTORIES=1). */
const CORRECTION_PATHS = [
  'correction-contact-after-signature.json',
  'correction-remove-then-add.json',
  'correction-resend-then-deadline-sooner.json',
  'correction-refused-by-provider.json',
];
/**
 * Approvals before sending (test/workflows/approvals.test.ts, RECORD_REFUSAL_HISTORIES=1): sent at its quorum, rejected,
 * reminded then expired, a run handed over while it awaits approval. And a signing URL asked while the quorum was unmet,
 * refused in the task in which the approval that meets it is answered, since the draft is not sent yet: a race only
 * the explorer reaches on purpose, recorded from explore/regressions/signing-url-racing-approval.json.
 */
const APPROVAL_PATHS = [
  'approval-quorum-then-signed.json',
  'approval-rejected.json',
  'approval-reminded-then-expired.json',
  'approval-handed-over.json',
  'approval-deadlines-together.json',
  'approval-signing-url-at-quorum.json',
];
/**
 * A bulk send with a bad row, signed to its end; one cancelled while it sends (`npm run replay:regenerate`); one
 * cancelled while it writes its result and must then hand over, whose withdrawals go first (test/bulk/bulk-cancel-hang.test.ts).
 */
const BULK_PATHS = ['bulk-send.json', 'bulk-send-cancelled.json', 'bulk-cancel-in-hand-over-1.json', 'bulk-cancel-in-hand-over-2.json'];
/**
 * The inbox, each started by the bridge for a completion no running workflow owned (`npm run replay:regenerate`):
 * one nobody owns, closed as orphaned and archived late; one whose owner ended, archived late at once; the inbox of a
 * late completion, and of one asked again after a run that found the transaction not completed. And a late copy of a
 * completion its owner archived, whose read of the provider's record was refused (422): the owner found without it,
 * the copy dropped; and an owner that could not be told at first, found before the completion would be closed as
 * orphaned (test/workflows/inbox-refused-read.test.ts records these two).
 */
const INBOX_PATHS = [
  'inbox-orphaned.json',
  'inbox-owner-ended.json',
  'late-completion-inbox.json',
  'late-completion-retried-inbox.json',
  'inbox-owner-archived-read-refused.json',
  'inbox-owner-found-before-orphaned.json',
];
/**
 * The late completion (`npm run replay:regenerate`): archived; started again after a run that found the transaction
 * not completed (both runs); a ZIP refused, refused again, then archived on an operator's retry.
 */
const LATE_PATHS = [
  'late-completion.json',
  'late-completion-retried.json',
  'late-completion-retried-not-completed.json',
  'late-completion-refused-then-retried.json',
];
/**
 * The integrator's event log: an endpoint down until every event failed, then a redelivery; a referenceId used again,
 * whose later transaction opens the ended log again. The evidence upkeep the Schedule starts: a page of archives, one
 * judged and due for renewal (`npm run replay:regenerate`).
 */
const EVENT_LOG_AND_UPKEEP_PATHS = ['event-log-failed-then-redelivered.json', 'event-log-reopened.json', 'evidence-upkeep.json'];
/**
 * The legal holds register before the archive store followed it (`S3_OBJECT_LEGAL_HOLD`, recorded by the code before
 * that patch, on the time-skipping server): its first run, started by a hold, with a second hold and a release; and a
 * run continued with a standing and a released hold, taking a hold and a release. Both still open. The path after
 * the patch is replayed by test/workflows/legal-holds-s3.test.ts from the history it makes.
 */
const LEGAL_HOLDS_PATHS = ['legal-holds.json', 'legal-holds-continued.json'];

/**
 * The histories each version recorded, by version: a released version's stay as they are; the current version's are
 * recorded again for a change not yet released. 1.0.0, the first release, keeps only what its own code records.
 */
const EXPECTED: Record<string, string[]> = {
  '1.0.0': [
    ...TRANSACTION_PATHS,
    ...LIFECYCLE_PATHS,
    ...REFUSAL_PATHS,
    ...CORRECTION_PATHS,
    ...APPROVAL_PATHS,
    ...BULK_PATHS,
    ...INBOX_PATHS,
    ...LATE_PATHS,
    ...EVENT_LOG_AND_UPKEEP_PATHS,
    ...LEGAL_HOLDS_PATHS,
  ],
};
/** Workflow types whose open runs move to the current version (each declares AUTO_UPGRADE beside its definition). */
const FOLLOW_CURRENT = ['esignInbox', 'esignLateCompletion', 'evidenceUpkeep', 'esignEventLog', 'legalHolds', 'recordsRetention'];
/** Workflow types whose runs stay on the version they started on (PINNED). */
const PINNED = ['esignTransaction', 'esignBulkSend'];

interface Recorded {
  file: string;
  type: string;
  history: { events: { eventType: string; markerRecordedEventAttributes?: { markerName?: string } }[] };
}

async function recordedBy(version: string): Promise<Recorded[]> {
  const files = (await readdir(`${dir}${version}`, { recursive: true })).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(
    files.map(async (file) => {
      const history = JSON.parse(await readFile(`${dir}${version}/${file}`, 'utf8')) as Recorded['history'] & {
        events: { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }[];
      };
      return { file, type: history.events[0]!.workflowExecutionStartedEventAttributes!.workflowType!.name!, history };
    }),
  );
}

/** Replays `histories` against a version's workflow code; the failures by file (none expected). */
async function replay(histories: Recorded[], code: string): Promise<{ file: string; error: string }[]> {
  const failures: { file: string; error: string }[] = [];
  const input = histories.map((h) => ({ workflowId: h.file, history: h.history }));
  for await (const r of Worker.runReplayHistories({ workflowsPath: await workflowsPathOf(code) }, input)) {
    if (r.error !== undefined)
      failures.push({ file: r.workflowId, error: r.error instanceof Error ? r.error.message : JSON.stringify(r.error) });
  }
  return failures;
}

it('keeps a folder of histories for exactly the current version and each released one it still replays', async () => {
  const folders = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  const versions = [...Object.keys(RELEASED_VERSIONS), CURRENT_VERSION].sort();
  expect(folders.sort()).toEqual(versions);
  expect(Object.keys(EXPECTED).sort()).toEqual(versions);
  for (const version of folders) expect((await recordedBy(version)).map((h) => h.file)).toEqual([...EXPECTED[version]!].sort());
});

describe.each(Object.keys(EXPECTED))('histories recorded by version %s', (version) => {
  it(`replay against the workflow code of ${version}`, async () => {
    expect(await replay(await recordedBy(version), version)).toEqual([]);
  }, 120_000);
});

// None while 1.0.0, the first release, is the current version: the next version lists it (test/support/code-versions.ts).
describe.each(Object.keys(RELEASED_VERSIONS))('histories recorded by the released version %s', (version) => {
  it(`of workflows that follow the current version replay against ${CURRENT_VERSION} too`, async () => {
    const following = (await recordedBy(version)).filter((h) => FOLLOW_CURRENT.includes(h.type));
    expect(following.length).toBeGreaterThan(0);
    expect(await replay(following, CURRENT_VERSION)).toEqual([]);
  }, 120_000);
});

// The pinned workflows change only as new versions, never behind `patched()`: their histories carry no patch marker
// (nor the SDK's TemporalChangeVersion upsert that goes with each), a dozen events fewer per transaction
// (docs/benchmarks.md). 1.0.0's histories of the others record none either: the one patch since 1.0, the holds
// register's, is replayed here by its path before it.
it('records no patch marker in a pinned workflow’s history, and none at all in 1.0.0’s', async () => {
  const markers = (histories: Recorded[]) =>
    histories.flatMap((h) =>
      h.history.events
        .filter((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED' && e.markerRecordedEventAttributes?.markerName === 'core_patch')
        .map(() => h.file),
    );
  for (const version of Object.keys(EXPECTED)) {
    const pinned = (await recordedBy(version)).filter((h) => PINNED.includes(h.type));
    expect(pinned.length).toBeGreaterThan(10);
    expect(markers(pinned)).toEqual([]);
  }
  expect(markers(await recordedBy('1.0.0'))).toEqual([]);
});
