import { Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import { EsignApiError } from '../../src/esign/errors.js';
import { providerFailure } from '../../src/esign/temporal-failure.js';

const HEARTBEAT_EVERY_MS = 2_000;

/**
 * Runs an activity's work while heartbeating every 2 s. The heartbeat proves
 * the worker process is alive, so a worker that dies mid-activity is noticed
 * within the activity's short heartbeat timeout rather than its whole
 * start-to-close timeout; progress details, when given, show in the Web UI and CLI.
 */
export async function whileHeartbeating<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  const ctx = Context.current();
  // A local activity has no heartbeat: it runs within its workflow task, which the worker keeps alive.
  if (ctx.info.isLocal) return work();
  const beat = setInterval(() => ctx.heartbeat(details?.()), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}

/** Calls the provider while heartbeating, turning its errors into the failures Temporal retries or not. */
export async function callProvider<T>(call: () => Promise<T>, details?: () => unknown): Promise<T> {
  try {
    return await whileHeartbeating(call, details);
  } catch (err) {
    throw providerFailure(err);
  }
}

/** A rate-limit wait the provider may ask for in place; a longer one fails the activity, whose retry honours it. */
const LONGEST_WAIT_IN_PLACE_MS = 30_000;

/**
 * Calls the provider like `callProvider`, but waits out its rate limits (429 with Retry-After) in place, up to
 * `tries` calls. For a call that is one of several in a row (a scan of the list, page after page): failing the
 * activity would start the scan over, and under a steady share of 429s a long scan would then never finish.
 */
export async function callProviderThroughRateLimits<T>(
  call: () => Promise<T>,
  signal: AbortSignal,
  details?: () => unknown,
  tries = 6,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await whileHeartbeating(call, details);
    } catch (err) {
      const waitMs = err instanceof EsignApiError && err.status === 429 ? (err.retryAfterMs ?? 1_000) : undefined;
      if (waitMs === undefined || waitMs > LONGEST_WAIT_IN_PLACE_MS || attempt >= tries) throw providerFailure(err);
      await whileHeartbeating(() => sleep(waitMs, undefined, { signal }), details);
    }
  }
}
