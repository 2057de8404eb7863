/**
 * How the transaction workflow calls its activities: which run locally,
 * and the two orderings it keeps. Local activities run one at a time: two
 * outstanding at once (an update's signing URL while the main path registers)
 * may resolve in another order on replay than they ran. Provider writes (a
 * replace, a withdraw) run one at a time too, so a withdraw never races a
 * replace that would make the transaction signable again.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../../src/failures.js';
import { LOCAL_POLL, LOCAL_PROVIDER, localStep, PROVIDER, REPORT, step } from '../activity-options.js';
import type { Clock } from '../clock.js';
import { Mutex } from './mutex.js';

type Acts = ReturnType<typeof step>;
type Call<T> = (activities: Acts) => Promise<T>;

export class Steps {
  readonly #locals: Mutex;
  readonly #writes = new Mutex();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#locals = new Mutex(() => clock.localActivityResolved());
  }

  /** A short provider call, local: a round trip fewer than an activity. */
  provider<T>(summary: string, call: Call<T>): Promise<T> {
    return this.#local(LOCAL_PROVIDER, summary, call);
  }

  /** A reconciliation poll: gives up quickly, the next one comes anyway. */
  poll<T>(summary: string, call: Call<T>): Promise<T> {
    return this.#local(LOCAL_POLL, summary, call);
  }

  /**
   * A provider call that gives up after a few attempts, as a poll does: a signing URL for a caller or a reminder.
   * While the provider's endpoint fails, it must not hold the local-activity lock (and so the loop) for ever.
   */
  attempt<T>(summary: string, call: Call<T>): Promise<T> {
    return this.#local(LOCAL_POLL, summary, call);
  }

  /** The final report. */
  report<T>(summary: string, call: Call<T>): Promise<T> {
    return this.#local(REPORT, summary, call);
  }

  /** A change at the provider (replace, withdraw): one at a time. */
  write<T>(summary: string, call: Call<T>): Promise<T> {
    return this.#writes.run(() => call(step(PROVIDER, summary)));
  }

  /** Whether a provider write is running or waiting. */
  get writing(): boolean {
    return this.#writes.busy;
  }

  #local<T>(options: Parameters<typeof localStep>[0], summary: string, call: Call<T>): Promise<T> {
    return this.#locals.run(() => {
      // The time before it, which the clock holds while the local activity's result is read in this task.
      this.#clock.now();
      return call(localStep(options, summary));
    });
  }
}

/** The provider's final answer to a call (a 4xx, not retried), with its HTTP status; undefined for any other failure. */
export function providerRefusal(err: unknown): { status: number | null; message: string } | undefined {
  // An activity's failure wraps the provider's; a local activity's is the provider's itself.
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  if (!cause.nonRetryable || cause.type !== FailureType.ProviderRejected) return undefined;
  const status = (cause.details?.[0] as { status?: number | null } | undefined)?.status ?? null;
  return { status, message: cause.message };
}
