import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { z } from 'zod';
import { EsignApiError } from '../../src/esign/errors.js';
import { FailureType } from '../../src/failures.js';
import { callProvider, whileHeartbeating } from './heartbeat.js';

/**
 * A write to the provider whose answer never came (the client gave up waiting) may still reach it afterwards: a
 * provider slow to answer is often still working on it. A create's retry that looks for it before then misses it and
 * creates a second transaction; a replace's retry sent before then may be overtaken by it, and so may a correction
 * that follows. So an attempt writes only once every write an earlier attempt may have sent can no longer land: sent
 * at T, it was given up on by T + `abandonsAfterMs` (EsignClient), and lands by that much after being given up on.
 *
 * What an attempt did is in its heartbeat details, for the next attempt to read:
 * - its first heartbeat, sent at once (the SDK throttles only later ones), says which attempt it is and either that it
 *   may write (`sending`) or that it only waits (`clearAt`): an attempt that waits never writes, it fails once the
 *   wait is over (in place when short, else with the wait as its retry delay), so a writing attempt's first heartbeat
 *   is always its own;
 * - before it writes, when (`sentAt`); and if the provider answered it (any status but a gateway's 504, which gave up
 *   on a provider that may still be working), or it never left (the connection was never made), that nothing of it is
 *   on its way (`answered`); so does an attempt that fails before it writes (a create's lookup). These come later and
 *   may be
 *   throttled: a failing attempt's last details are flushed with its failure, a worker that dies loses them.
 *
 * The next attempt reads the details of the attempt just before it only (an older attempt's say nothing of what the
 * one before sent): an answered write, nothing to wait for; a known `sentAt`, until `sentAt` + 2 x `abandonsAfterMs`;
 * a wait, until its `clearAt`; anything else (it may have written, not known when; no details at all), from now.
 * A margin for the clocks of two workers is added (`clockSkewMs`).
 */
const Details = z.object({
  attempt: z.number().int(),
  sending: z.boolean().optional(),
  sentAt: z.number().finite().optional(),
  answered: z.boolean().optional(),
  clearAt: z.number().finite().optional(),
});
type Details = z.infer<typeof Details>;

export interface WriteAttemptOptions {
  /** EsignClient `abandonsAfterMs`. */
  abandonsAfterMs: number;
  /** How far the clocks of two workers may be apart. */
  clockSkewMs: number;
  /** A longer wait is not made in place (the attempt's start-to-close must hold the write): the retry comes after it. */
  longestWaitInPlaceMs?: number;
}

/** Workers keep their clocks by NTP, within milliseconds: a margin for one that drifted. */
export const DEFAULT_WORKER_CLOCK_SKEW_MS = 5_000;
const LONGEST_WAIT_IN_PLACE_MS = 30_000;
/** After a wait made in place, the attempt that writes comes at once. */
const AFTER_WAIT_MS = 100;

/**
 * Whether an earlier attempt may have written: a retry, or a first attempt with heartbeat details (an operator's
 * `temporal activity reset` starts the count again and keeps them).
 */
function retried(attempt: number, heartbeat: unknown): boolean {
  return attempt > 1 || (heartbeat !== undefined && heartbeat !== null);
}

/** When every write the attempt before may have sent can no longer land (`undefined`: none is on its way). */
function clearAt(heartbeat: unknown, attempt: number, now: number, bound: number): number | undefined {
  if (!retried(attempt, heartbeat)) return undefined;
  const parsed = Details.safeParse(heartbeat);
  if (!parsed.success || parsed.data.attempt !== attempt - 1) return now + bound;
  const d = parsed.data;
  if (d.clearAt !== undefined && !d.sending) return d.clearAt;
  if (d.answered) return undefined;
  if (d.sentAt !== undefined) return d.sentAt + bound;
  return now + bound;
}

/** One attempt of an activity that writes to the provider (`docs/workflow.md`, "Creating exactly once"). */
export class WriteAttempt {
  #details: Details;
  readonly #abandonsAfterMs: number;
  /** Whether an earlier attempt may have written (a create then looks for what it made before writing again). */
  readonly retried: boolean;

  private constructor(details: Details, abandonsAfterMs: number, retried: boolean) {
    this.#details = details;
    this.#abandonsAfterMs = abandonsAfterMs;
    this.retried = retried;
  }

  /**
   * Begins the attempt: returns once it may write, or fails (retryable) after which the next attempt may. `what` names
   * the write in the log and the failure.
   */
  static async begin(what: string, options: WriteAttemptOptions): Promise<WriteAttempt> {
    const { info, cancellationSignal } = Context.current();
    // A local activity has no heartbeat, so no attempt could say what it sent: writes run as activities.
    if (info.isLocal) throw new TypeError(`${what}: a write to the provider must not run as a local activity`);
    const now = Date.now();
    const until = clearAt(info.heartbeatDetails, info.attempt, now, 2 * options.abandonsAfterMs + options.clockSkewMs);
    if (until === undefined || until <= now) {
      const attempt = new WriteAttempt(
        { attempt: info.attempt, sending: true },
        options.abandonsAfterMs,
        retried(info.attempt, info.heartbeatDetails),
      );
      attempt.#beat();
      return attempt;
    }
    const waiting: Details = { attempt: info.attempt, clearAt: until };
    Context.current().heartbeat(waiting);
    const waitMs = until - now;
    log.info(`${what} retried: a write an earlier attempt sent may still land; written once it cannot`, { waitMs });
    if (waitMs > (options.longestWaitInPlaceMs ?? LONGEST_WAIT_IN_PLACE_MS))
      throw ApplicationFailure.create({
        message: `${what}: a write an earlier attempt sent may still reach the provider for ${Math.ceil(waitMs / 1000)} s; tried again after`,
        type: FailureType.ProviderUnavailable,
        nextRetryDelay: waitMs,
      });
    await whileHeartbeating(
      () => sleep(waitMs, undefined, { signal: cancellationSignal }),
      () => waiting,
    );
    throw ApplicationFailure.create({
      message: `${what}: waited until a write an earlier attempt sent could no longer reach the provider; the next attempt writes`,
      type: FailureType.ProviderUnavailable,
      nextRetryDelay: AFTER_WAIT_MS,
    });
  }

  /** What every heartbeat of this attempt says (a lookup's too, so that none of them says less). */
  readonly details = (): Details => this.#details;

  /**
   * Sends the write, saying when first and then, if the provider answered or it never left, that it did. It is given
   * up on `abandonsAfterMs` after that time at the latest, however long it waited for a connection of the worker's
   * pool (uploads and downloads hold theirs for their whole body): the bound the next attempt counts on is from then.
   */
  async send<T>(write: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const { cancellationSignal } = Context.current();
    this.#details = { ...this.#details, sentAt: Date.now() };
    this.#beat();
    const signal = AbortSignal.any([cancellationSignal, AbortSignal.timeout(this.#abandonsAfterMs)]);
    return callProvider(
      () =>
        write(signal).then(
          (answer) => {
            // Answered: whatever fails after (a lookup of what it made) leaves nothing on its way.
            this.#settle();
            return answer;
          },
          (err: unknown) => {
            // An answer ends the request where it is (a 500 or 502 too: what the provider did, it did before answering),
            // except a gateway's 504, sent while the provider may still be working on it.
            const settled = err instanceof EsignApiError && ((err.kind === 'http' && err.status !== 504) || err.unsent);
            if (settled) this.#settle();
            throw err;
          },
        ),
      this.details,
    );
  }

  /**
   * Says that nothing this attempt sent is on its way: before it wrote, a step failed (a create's lookup), so the next
   * attempt need not wait (its wait for earlier attempts was this one's).
   */
  nothingSent(): void {
    if (this.#details.sentAt === undefined) this.#settle();
  }

  #settle(): void {
    this.#details = { ...this.#details, answered: true };
    this.#beat();
  }

  #beat(): void {
    Context.current().heartbeat(this.#details);
  }
}
