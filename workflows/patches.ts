/**
 * Every `patched()` name of the workflows, in one place. Each marks a change
 * of the commands a run records; a run started before it replays the old
 * branch, and the histories of the older version stay in
 * test/replay/histories/before-<name>/ (docs/workflow.md, "Versions", says
 * which behaviour each guards). The transaction workflow asks its names once
 * per run, in `Versions` (./transaction/versions.ts).
 */

// ------------------------------------------------------------ esignTransaction
/** Input validation moved from the workflow sandbox to a local activity (workflows/README.md says why). */
export const INPUT_VALIDATED_OUTSIDE_SANDBOX = 'input-validated-in-local-activity';
/** The deadline counts from the workflow's start, not from the clock after input validation. */
export const DEADLINE_FROM_START = 'deadline-counted-from-workflow-start';
/** Short, idempotent provider calls and the report run as local activities (a round trip fewer each). */
export const SHORT_STEPS_LOCAL = 'short-steps-as-local-activities';
/** Cancel and deadline withdraw the transaction at the provider before the workflow reports its end. */
export const WITHDRAW_BEFORE_END = 'withdraw-at-provider-before-end';
/** Polls back off (with jitter) and the workflow continues as new before its history grows large. */
export const BOUNDED_HISTORY = 'bounded-polling-and-continue-as-new';
/** Participant progress, reminders and signed events to the integrator's callback. */
export const PROGRESS_AND_EVENTS = 'participant-progress-reminders-and-events';
/**
 * The explicit state machine's rules that change commands: provider writes one
 * at a time (a replace never overtakes a withdraw), a replace waits until the
 * transaction is registered, and the clock is never read after a local
 * activity in the same workflow task.
 */
export const STATE_MACHINE = 'transaction-state-machine';

// ------------------------------------------------------------------ esignInbox
/** Completions nobody waits for start a late-completion workflow; histories before it only logged them. */
export const LATE_COMPLETION_PATCH = 'inbox-starts-late-completion';
/**
 * A completion reaching an inbox no workflow has registered with looks up the
 * transaction's owner, and is archived at once when the owner has ended;
 * histories before it waited for the orphan timeout.
 */
export const OWNER_LOOKUP_PATCH = 'inbox-looks-up-owner-of-completion';
/**
 * A later completion asks again for a late completion (which starts anew only
 * if the earlier run did not archive); histories before it started one at most.
 */
export const LATE_RETRY_PATCH = 'inbox-retries-late-completion';
