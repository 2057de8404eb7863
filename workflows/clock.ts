/**
 * The only place workflow code reads the clock (lint bans `Date.now()` and
 * `new Date()` elsewhere in workflows/). A replay sees the time the first
 * execution saw at the start of each workflow task, but not always after a
 * local activity: one that outlives its workflow task (a slow provider,
 * retries) resolves at the worker's time in the first execution and at
 * another in a replay (test/workflows/workflow-clock.test.ts shows both). So after a
 * local activity, until the next workflow task, `now()` returns the last
 * time read before it, which every replay reads the same.
 */
import { workflowInfo } from '@temporalio/workflow';

export class Clock {
  #last: number;
  /** The history length of the workflow task in which a local activity last resolved. */
  #taintedIn = -1;

  /** Construct it at the start of a run, before any local activity. */
  constructor() {
    this.#last = Date.now();
  }

  now(): number {
    if (workflowInfo().historyLength !== this.#taintedIn) this.#last = Date.now();
    return this.#last;
  }

  /** The time `now()` would give, without keeping it: for validators, which a replay does not run. */
  peek(): number {
    return workflowInfo().historyLength !== this.#taintedIn ? Date.now() : this.#last;
  }

  /** An ISO 8601 time: now, or the given epoch milliseconds. */
  iso(at: number = this.now()): string {
    return new Date(at).toISOString();
  }

  /** Called as each local activity resolves or fails. */
  localActivityResolved(): void {
    this.#taintedIn = workflowInfo().historyLength;
  }
}
