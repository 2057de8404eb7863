/**
 * Every `patched()` name of the workflows, in one place. 1.0 removed every patch that only runs of earlier code
 * needed (docs/decisions/versioning-policy.md).
 *
 * Only the workflows that follow the deployment's current version (AUTO_UPGRADE: the inbox, the late completion, the
 * event log, the evidence upkeep, the legal holds register, the records retention) take patches: a run started on
 * older code replays on newer code. The transaction
 * workflow and the bulk send are pinned, so a change to them ships as a new Worker Deployment version instead, never
 * behind `patched()`. A patch here is:
 *
 * - a constant named for the behaviour it brings, its id a kebab-case sentence (`'inbox-retries-late-completion'`),
 *   under the heading of its workflow, with a comment saying what runs before it did;
 * - asked before any local activity of the same workflow task (workflows/README.md, "Three traps");
 * - released with a history of the old path in the released version's folder of test/replay/histories/, which
 *   test/workflows/replay.test.ts replays against today's code, and one of the new path in the current version's;
 * - retired per docs/operations.md ("What needs a patch, and retiring one"): `deprecatePatch` once no run from before
 *   it is open, then removed a release later.
 */

// The legal holds register (workflows/legal-holds.ts).

/**
 * After a hold is placed or released, the register has the archive store set or clear its own legal hold on the
 * archives that change covers (S3 Object Lock's, `applyLegalHolds`). A register before it only answered: its
 * history has no activity.
 */
export const S3_OBJECT_LEGAL_HOLD = 's3-object-legal-hold';
