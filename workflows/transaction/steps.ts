/**
 * How the transaction workflow calls its activities: which run locally,
 * and the two orderings it keeps. Local activities run one at a time: two
 * outstanding at once (an update's signing URL while the main path registers)
 * may resolve in another order on replay than they ran. Provider writes (a
 * replace, a withdraw) run one at a time too, so a withdraw never races a
 * replace that would make the transaction signable again.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, log, sleep } from '@temporalio/workflow';
import type { TransactionState } from '../../activities/transactions.js';
import { FailureType } from '../../src/failures.js';
import { LOCAL_POLL, localStep, PROVIDER, REPORT, step } from '../activity-options.js';
import type { Clock } from '../clock.js';
import type { SigningTransaction } from './machine.js';
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

  /** The workflow's time (./clock.ts: the time before a local activity, until the next workflow task). */
  now(): number {
    return this.#clock.now();
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

/**
 * Until when a replace whose failure this is may still land: set by `updateTransaction` when an attempt before the
 * one that failed was given up on (it may reach the provider yet); undefined otherwise.
 */
export function landsUntilOf(err: unknown): number | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const landsUntil = (cause.details?.[0] as { landsUntil?: unknown } | undefined)?.landsUntil;
  return typeof landsUntil === 'number' && Number.isFinite(landsUntil) ? landsUntil : undefined;
}

/** How soon the loop polls again after a read the provider did not answer, or answered 404. */
export const READ_AGAIN_MS = 30_000;

/**
 * A provider call's failure, as an update's caller hears it: the provider's final refusal (`ProviderRejected`, with its
 * message), or the provider not answering (`ProviderUnavailable`: ask again later).
 */
export function providerFailure(err: unknown, what: string): ApplicationFailure {
  const refusal = providerRefusal(err);
  const why = refusal?.message ?? ((err as { cause?: Error }).cause ?? (err as Error)).message;
  return ApplicationFailure.nonRetryable(
    `${what}: ${why}${refusal ? '' : '; ask again later'}`,
    refusal ? FailureType.ProviderRejected : FailureType.ProviderUnavailable,
  );
}

/** A provider write given up on may still land until `until`: a withdraw waits past it (machine.ts `replaceLandsUntil`). */
export function keepLandsUntil(tx: SigningTransaction, until: number | undefined): void {
  if (until !== undefined) tx.replaceLandsUntil = Math.max(tx.replaceLandsUntil, until);
}
/**
 * How long after a first 404 for the transaction a read must answer 404 again to confirm the provider no longer has
 * it: the loop's next poll comes READ_AGAIN_MS (jittered: 27 to 33 s) after a 404, a withdraw's read as long.
 */
export const NOT_FOUND_CONFIRMED_AFTER_MS = 20_000;

/** The provider no longer has the transaction (404, confirmed): it can no longer complete; it ends `deleted`. */
export const GONE = { status: 'deleted', gone: true } as const;
export type Gone = typeof GONE;

/**
 * What a read is for: `poll`, the reconciliation poll (at its backed-off interval unless a 404 asks for a read
 * soon); `deletion`, confirming the provider's own signed deletion webhook; `read`, anything else.
 */
export type Reading = 'read' | 'poll' | 'deletion';

/**
 * The provider's state; undefined when it refused to say (a 4xx, not retried) or did not answer within a poll's few
 * attempts: the loop reads it again at its next poll, never failing the run, and never held by a read retried for as
 * long as the provider is down (a cancel, the deadline's withdraw and the hand-over wait on the loop). A 404 is the
 * transaction's end (`GONE`) when it confirms the provider's own deletion webhook, or an earlier 404 (`notFound`).
 */
export async function readState(
  steps: Steps,
  tx: SigningTransaction,
  summary: string,
  reading: Reading = 'read',
): Promise<Gone | TransactionState | undefined> {
  // Not told: the next poll comes soon (READ_AGAIN_MS), not at an interval backed off to an hour, since a
  // completion announced may be waiting on it.
  if (reading !== 'poll') tx.readSoon = true;
  try {
    const state = await steps.poll(summary, (a) => a.getTransactionStatus(tx.created!.transactionId));
    tx.readSoon = false;
    tx.notFoundSince = undefined;
    return state;
  } catch (err) {
    if (isCancellation(err)) throw err;
    const refusal = providerRefusal(err);
    if (refusal?.status === 404) return notFound(tx, steps.now(), reading === 'deletion');
    if (refusal)
      log.warn('the provider refused to say how the transaction stands; it is read again at the next poll', {
        status: refusal.status,
        error: refusal.message,
      });
    else
      log.warn('the provider did not say how the transaction stands; it is read again at the next poll', { error: (err as Error).message });
    return undefined;
  }
}

/**
 * A read answered 404 (the read activity counts one only while the provider answers its list, so a wrong base URL
 * never does). The end (`GONE`) when it confirms the provider's deletion webhook, or a 404 at least
 * NOT_FOUND_CONFIRMED_AFTER_MS before it with no answer between: a provider that deleted the transaction and lost
 * its webhook, then forgot it, answers nothing else for it, and it can no longer complete. A first 404 ends nothing
 * (it may be passing: a proxy, a deploy at the provider); the transaction is read again soon
 * (docs/decisions/provider-404-confirmed-by-a-second-read.md, docs/spec-gaps.md row 52).
 */
function notFound(tx: SigningTransaction, now: number, deletedSaid: boolean): Gone | undefined {
  const since = tx.notFoundSince;
  if (deletedSaid || (since !== undefined && now - since >= NOT_FOUND_CONFIRMED_AFTER_MS)) return GONE;
  tx.notFoundSince = since ?? now;
  tx.readSoon = true;
  log.warn('the provider answers 404 for the transaction; it is read again shortly, and ends deleted if it answers 404 again');
  return undefined;
}

/**
 * A withdraw answered 404: the provider may no longer have the transaction. Read again once a 404 there would confirm
 * it: `GONE`, or how the transaction stands, or undefined when the provider did not say.
 */
export async function readAfterNotFound(steps: Steps, tx: SigningTransaction): Promise<Gone | TransactionState | undefined> {
  tx.notFoundSince ??= steps.now();
  await sleep(READ_AGAIN_MS, { summary: 'The withdraw was answered 404: read again to see whether the provider still has it' });
  return readState(steps, tx, 'Confirm that the provider no longer has the transaction (its withdraw was answered 404)');
}
