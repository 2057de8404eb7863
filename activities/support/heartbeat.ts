import { Context } from '@temporalio/activity';
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
export async function callProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await whileHeartbeating(call);
  } catch (err) {
    throw providerFailure(err);
  }
}
