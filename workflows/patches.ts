/**
 * Every `patched()` name of the workflows, in one place. Only workflows that
 * follow the deployment's current version (AUTO_UPGRADE: the inbox, the late
 * completion, the event log, the upkeep) need them: a run started on older code replays on newer code. The transaction
 * workflow is pinned, so a change to it ships as a new Worker Deployment
 * version instead (docs/operations.md, "What needs a patch"). The histories
 * recorded before each patch stay in
 * test/replay/histories/<version>/before-<name>/.
 */

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
/**
 * When the provider does not answer the inbox's read of a completed transaction (a final 4xx, or not at all), the
 * owner is still looked up, without the record (the run that names the transaction, or the referenceId the bridge
 * routed by); and a completion about to be closed as orphaned has its owner looked up once more. Histories before it
 * waited as for any notification, then archived the completion without what its owner left, even one it had archived.
 */
export const OWNER_WITHOUT_RECORD_PATCH = 'inbox-finds-owner-without-provider-record';

// ------------------------------------------------------- esignLateCompletion
/**
 * `transaction.completed_late` goes through the transaction's event log (numbered after its other events);
 * histories before it sent it straight to the callback, unnumbered.
 */
export const LATE_EVENT_LOG_PATCH = 'late-completion-through-event-log';
/**
 * A refused late archive (a ZIP refused by verification, a 4xx on the read or the download) waits in `archive_invalid`
 * for an operator's `retryArchive`, and tells the integrator; histories before it failed the run there.
 */
export const LATE_ARCHIVE_HELD_PATCH = 'late-completion-holds-refused-archive';
