import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { expect, it } from 'vitest';
import { workflowsPath } from '../src/worker/create-worker.js';

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
/** Paths the state machine opened: a refused archive retried by an operator, a cancel in the hand-over, a replace before a cancel. */
const STATE_MACHINE_PATHS = [
  'archive-refused-then-retried.json',
  'cancel-in-hand-over-1.json',
  'cancel-in-hand-over-2.json',
  'replace-then-cancel.json',
];

// Committed histories of the workflows' paths (npm run replay:regenerate writes
// the top level). Histories of earlier workflow versions stay in sub-folders, so
// every `patched` branch keeps being replayed. A change that breaks any of them
// fails here: version it with `patched`.
it('replays every committed history, of this version and earlier ones, with the current workflow code', async () => {
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.json')).sort();
  expect(files).toEqual(
    [
      ...INBOX_PATHS.map((f) => `before-late-completion-patch/${f}`),
      ...PATHS.map((f) => `before-input-validation-patch/${f}`),
      ...PATHS.map((f) => `before-withdraw-patch/${f}`),
      ...[...PATHS, ...INBOX_PATHS, ...LIFECYCLE_PATHS].map((f) => `before-progress-patch/${f}`),
      ...[...PATHS, ...INBOX_PATHS, ...LIFECYCLE_PATHS, ...PROGRESS_PATHS, ...EVIDENCE_PATHS].map((f) => `before-local-steps-patch/${f}`),
      ...BEFORE_OWNER_LOOKUP_PATHS.map((f) => `before-owner-lookup-patch/${f}`),
      ...TRANSACTION_PATHS.map((f) => `before-state-machine-patch/${f}`),
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
    ].sort(),
  );
  const histories = await Promise.all(
    files.map(async (file) => ({ workflowId: file, history: JSON.parse(await readFile(`${dir}${file}`, 'utf8')) as unknown })),
  );
  const outcomes: { workflowId: string; error?: unknown }[] = [];
  for await (const result of Worker.runReplayHistories({ workflowsPath }, histories)) outcomes.push(result);
  expect(
    outcomes.map((o) => ({
      workflowId: o.workflowId,
      error: o.error instanceof Error ? o.error.message : o.error === undefined ? undefined : JSON.stringify(o.error),
    })),
  ).toEqual(files.map((workflowId) => ({ workflowId, error: undefined })));
});
