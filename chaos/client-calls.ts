// The drivers' client calls are retried as a backend would retry them while Temporal or the provider is down:
// until the run's deadline, every retry counted for the report (faults the clients absorbed).
import { SandboxControlError } from '../src/client/sandbox-control.js';

/** Errors that retrying cannot fix: the run reports them instead of looping. */
export class Final extends Error {}

export type Retrying = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `retrying` gives up on a `Final` error, or on any once `deadline` (epoch milliseconds) has passed. */
export function clientRetrying(deadline: number): { retrying: Retrying; counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  const retrying: Retrying = async (what, fn) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof Final || Date.now() > deadline) throw err;
        counts[what] = (counts[what] ?? 0) + 1;
        await sleep(Math.min(2000, 250 * attempt));
      }
    }
  };
  return { retrying, counts };
}

/** A provider-side action that lost a race (or a retry of one that went through): the checks judge the end. */
export async function ignoreEnded(action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (err instanceof SandboxControlError && err.status === 409) return;
    throw err;
  }
}
