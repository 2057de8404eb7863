/**
 * Every `patched()` name of the transaction workflow, in one place. Each marks
 * a change of the commands a run records; a run started before it replays the
 * old branch. They are asked once per run, in `Versions.ask*`, at the points
 * the recorded histories expect them (a marker asked right after a local
 * activity lands ahead of its result in history and breaks replay).
 * docs/workflow.md ("Versions") says which behaviour each one guards.
 */
import { patched } from '@temporalio/workflow';

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

/** Which behaviours this run has: all true for a run started on this code, false where an older history says so. */
export class Versions {
  localSteps = false;
  deadlineFromStart = false;
  stateMachine = false;
  withdrawFirst = false;
  bounded = false;
  eventsOn = false;

  /** Asked after the handlers are registered (an update sent with the start is accepted ahead of these markers) and before any local activity. */
  askAtStart(continued: boolean): void {
    this.deadlineFromStart = !continued && patched(DEADLINE_FROM_START);
    this.localSteps = patched(SHORT_STEPS_LOCAL);
    this.stateMachine = patched(STATE_MACHINE);
  }

  /** The behaviours decided once the transaction exists at the provider. */
  askOnceCreated(): void {
    this.withdrawFirst = patched(WITHDRAW_BEFORE_END);
    this.bounded = patched(BOUNDED_HISTORY);
    this.eventsOn = patched(PROGRESS_AND_EVENTS);
  }
}
