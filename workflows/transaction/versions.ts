/**
 * Which behaviours a run of the transaction workflow has: each patch is asked
 * once per run, at the point the recorded histories expect it (a marker asked
 * right after a local activity lands ahead of its result in history and
 * breaks replay).
 */
import { patched } from '@temporalio/workflow';
import {
  BOUNDED_HISTORY,
  DEADLINE_FROM_START,
  PROGRESS_AND_EVENTS,
  SHORT_STEPS_LOCAL,
  STATE_MACHINE,
  WITHDRAW_BEFORE_END,
} from '../patches.js';

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
