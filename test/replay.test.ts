// Committed histories of the workflows' paths, in a folder per workflow code version that recorded them
// (`npm run replay:regenerate` writes the current version's). Each replays against its own version's code, taken
// from git (test/support/code-versions.ts): a pinned transaction never runs on other code. The workflows that follow
// the current version (AUTO_UPGRADE) replay against today's code as well, since their open runs move to it: a change
// that breaks one of those needs `patched` (docs/operations.md, "What needs a patch").
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { CURRENT_VERSION, RELEASED_VERSIONS, workflowsPathOf } from './support/code-versions.js';

const dir = fileURLToPath(new URL('./replay/histories/', import.meta.url));

/** The transaction's main paths, recorded by every version since input validation left the workflow sandbox. */
const PATHS = [
  'cancelled.json',
  'completed-by-reconciliation.json',
  'completed-by-webhook.json',
  'draft-sent-then-completed.json',
  'expired.json',
];
/** The webhook inbox: forwarding, a redelivery and a webhook after its owner finished; and an orphaned one. */
const INBOX_PATHS = ['inbox-forwarded-then-stale.json', 'inbox-orphaned.json'];
/** Every way a transaction ends, continue-as-new, and the late completion with the inbox that started it. */
const LIFECYCLE_PATHS = [
  'cancel-refused-then-completed.json',
  'continued-as-new-1.json',
  'continued-as-new-2.json',
  'declined.json',
  'late-completion-inbox.json',
  'late-completion.json',
  'overdue-then-completed.json',
  'provider-cancelled.json',
];
/** The inbox and late-completion histories the owner lookup and the late-completion retry changed (before-owner-lookup-patch/). */
const BEFORE_OWNER_LOOKUP_PATHS = ['inbox-orphaned.json', 'late-completion-inbox.json', 'late-completion.json'];
/**
 * A completion to an inbox no workflow registered with: the owner has ended (archived at once) or runs (waited for);
 * and a late completion started again after a run that found the transaction not completed.
 */
const OWNER_LOOKUP_PATHS = [
  'inbox-owner-ended.json',
  'inbox-owner-running.json',
  'late-completion-retried-inbox.json',
  'late-completion-retried-not-completed.json',
  'late-completion-retried.json',
];
/** Participant progress, a reminder and the integrator's events. */
const PROGRESS_PATHS = ['progress-reminders-and-events.json'];
/** The upload's SHA-256 passed to the archive, and the evidence it recorded. */
const EVIDENCE_PATHS = ['completed-with-evidence.json'];
/** A signing URL asked with the start, while the transaction is created and registered (local activities, one at a time). */
const LOCAL_STEP_PATHS = ['signing-url-with-start.json'];
/** The evidence upkeep the Schedule starts: a page of archives, one judged and due for renewal. */
const UPKEEP_PATHS = ['evidence-upkeep.json'];
/** Worker Versioning: a run pinned to v1 handed over when v2 became current (run 1, on v1), finished on v2 (run 2). */
const UPGRADE_PATHS = ['upgraded-at-continue-as-new-1.json', 'upgraded-at-continue-as-new-2.json'];
/** The transaction's histories recorded before the state machine (patch transaction-state-machine), kept in before-state-machine-patch/. */
const TRANSACTION_PATHS = [
  ...PATHS,
  ...LIFECYCLE_PATHS.filter((f) => !f.startsWith('late-completion')),
  ...PROGRESS_PATHS,
  ...EVIDENCE_PATHS,
  ...LOCAL_STEP_PATHS,
];
/** Paths the state machine opened: a refused archive retried by an operator, a replace before a cancel. */
const STATE_MACHINE_PATHS = ['archive-refused-then-retried.json', 'replace-then-cancel.json'];

/**
 * A bulk send with a bad row, signed to its end; one cancelled while it sends; one cancelled while it writes its
 * result and must then hand over, whose withdrawals go first (test/bulk-cancel-hang.test.ts records it) (from 0.2.0).
 */
const BULK_PATHS = ['bulk-send.json', 'bulk-send-cancelled.json', 'bulk-cancel-in-hand-over-1.json', 'bulk-cancel-in-hand-over-2.json'];
/**
 * A late completion whose ZIP was refused, refused again, then archived; and one of the code before that patch, which
 * failed on the refused ZIP (test/late-completion-refused.test.ts) (from 0.2.0).
 */
const LATE_REFUSED_PATHS = ['late-completion-refused-then-retried.json', 'late-completion-refused-before-patch.json'];
/** A completion of an earlier transaction of a reused referenceId, handed to the late path by the next run (from 0.2.0). */
const STRAY_PATHS = ['stray-completion.json'];
/**
 * The integrator's event log (from 0.2.0): an endpoint down until every event failed, then a redelivery; a
 * referenceId used again, whose later transaction opens the ended log again.
 */
const EVENT_LOG_PATHS = ['event-log-failed-then-redelivered.json', 'event-log-reopened.json'];
/**
 * A provider that fails or refuses (test/provider-refusals.test.ts) (from 0.2.0): reminders whose signing URL keeps
 * failing, then signed; a deletion confirmed by a 404; a cancel after a replace
 * whose first attempt was given up on and landed after the withdraw; a deletion whose webhook was lost, then 404s
 * for long enough to confirm it; a cancel whose withdraw meets a 404 that the read after it confirms.
 */
const REFUSAL_PATHS = [
  'reminder-url-failing-then-completed.json',
  'deleted-confirmed-by-404.json',
  'replace-lands-after-withdraw.json',
  'status-reads-down-cancel-refused-then-completed.json',
  'deleted-webhook-lost-then-404-twice.json',
  'cancel-withdraw-404-then-404-again.json',
];
/**
 * A replace whose first attempt was given up on and whose retry the provider refused (422), then a cancel whose
 * withdraw waits past the refused replace's window and withdraws again (test/replace-refused-window.test.ts) (from 0.2.0).
 */
const REPLACE_REFUSED_PATHS = ['replace-refused-lands-after-withdraw.json'];
/**
 * A late copy of a completion its owner archived, whose read of the provider's record the provider refused (422): the
 * owner found without it, the copy dropped; and an owner that could not be told at first, found before the
 * completion would be closed as orphaned (test/inbox-refused-read.test.ts records them) (from 0.2.0).
 */
const INBOX_REFUSED_READ_PATHS = ['inbox-owner-archived-read-refused.json', 'inbox-owner-found-before-orphaned.json'];
/** Every path 0.1.0 recorded, which the current code records too (npm run replay:regenerate). */
const RECORDED = [
  ...STATE_MACHINE_PATHS,
  ...PATHS,
  ...INBOX_PATHS,
  ...LIFECYCLE_PATHS,
  ...PROGRESS_PATHS,
  ...EVIDENCE_PATHS,
  ...LOCAL_STEP_PATHS,
  ...OWNER_LOOKUP_PATHS,
  ...UPKEEP_PATHS,
  ...UPGRADE_PATHS,
];
/** The histories each version recorded; 0.1.0 also keeps those of the versions before each of its patches. */
const EXPECTED: Record<string, string[]> = {
  '0.1.0': [
    ...INBOX_PATHS.map((f) => `before-late-completion-patch/${f}`),
    ...PATHS.map((f) => `before-input-validation-patch/${f}`),
    ...PATHS.map((f) => `before-withdraw-patch/${f}`),
    ...[...PATHS, ...INBOX_PATHS, ...LIFECYCLE_PATHS].map((f) => `before-progress-patch/${f}`),
    ...[...PATHS, ...INBOX_PATHS, ...LIFECYCLE_PATHS, ...PROGRESS_PATHS, ...EVIDENCE_PATHS].map((f) => `before-local-steps-patch/${f}`),
    ...BEFORE_OWNER_LOOKUP_PATHS.map((f) => `before-owner-lookup-patch/${f}`),
    ...TRANSACTION_PATHS.map((f) => `before-state-machine-patch/${f}`),
    ...RECORDED,
    // A cancel in the hand-over while an integrator event held the run: since the event log, no event holds it.
    'cancel-in-hand-over-1.json',
    'cancel-in-hand-over-2.json',
  ],
  [CURRENT_VERSION]: [
    ...RECORDED,
    ...BULK_PATHS,
    ...EVENT_LOG_PATHS,
    ...STRAY_PATHS,
    ...LATE_REFUSED_PATHS,
    ...REFUSAL_PATHS,
    ...REPLACE_REFUSED_PATHS,
    ...INBOX_REFUSED_READ_PATHS,
  ],
};
/** Workflow types whose open runs move to the current version (each declares AUTO_UPGRADE beside its definition). */
const FOLLOW_CURRENT = ['esignInbox', 'esignLateCompletion', 'evidenceUpkeep', 'esignEventLog'];

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
  expect(folders.sort()).toEqual([...Object.keys(RELEASED_VERSIONS), CURRENT_VERSION].sort());
  for (const version of folders) expect((await recordedBy(version)).map((h) => h.file)).toEqual([...EXPECTED[version]!].sort());
});

describe.each(Object.keys(EXPECTED))('histories recorded by version %s', (version) => {
  it(`replay against the workflow code of ${version}`, async () => {
    expect(await replay(await recordedBy(version), version)).toEqual([]);
  }, 120_000);
});

describe.each(Object.keys(RELEASED_VERSIONS))('histories recorded by the released version %s', (version) => {
  it(`of workflows that follow the current version replay against ${CURRENT_VERSION} too`, async () => {
    const following = (await recordedBy(version)).filter((h) => FOLLOW_CURRENT.includes(h.type));
    expect(following.length).toBeGreaterThan(0);
    expect(await replay(following, CURRENT_VERSION)).toEqual([]);
  }, 120_000);

  // Why its transactions must stay on its workers (pinned): today's code no longer takes their branches.
  it(`of the transaction do not replay against ${CURRENT_VERSION}`, async () => {
    const transaction = (await recordedBy(version)).filter((h) => h.file === 'completed-by-webhook.json');
    const failures = await replay(transaction, CURRENT_VERSION);
    expect(failures.map((f) => f.file)).toEqual(['completed-by-webhook.json']);
    expect(failures[0]!.error).toMatch(/nondeterminism/i);
  }, 120_000);
});

// Worker Versioning replaced the transaction's patches: its history carries no patch marker (nor the SDK's
// TemporalChangeVersion upsert that goes with each), a dozen events fewer per transaction (docs/benchmarks.md).
it(`records no patch marker in a transaction's history from ${CURRENT_VERSION} on`, async () => {
  const transactions = (await recordedBy(CURRENT_VERSION)).filter((h) => h.type === 'esignTransaction');
  expect(transactions.length).toBeGreaterThan(10);
  const markers = transactions.flatMap((h) =>
    h.history.events
      .filter((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED' && e.markerRecordedEventAttributes?.markerName === 'core_patch')
      .map(() => h.file),
  );
  expect(markers).toEqual([]);
  // What the check would catch: the previous version's transactions carry them.
  const before = (await recordedBy('0.1.0')).filter((h) => h.type === 'esignTransaction' && h.file === 'completed-by-webhook.json');
  expect(before[0]!.history.events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')).toBe(true);
});
