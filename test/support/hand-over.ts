import type { WorkflowHandle } from '@temporalio/client';
import { eventually } from './eventually.js';

/**
 * Waits until a run that reached its history bound sits in the continue-as-new
 * hand-over: still the same run, at least `bound` events, and not growing
 * between two looks (the hand-over waits for something the caller holds back).
 */
export async function waitInHandOver(handle: WorkflowHandle, runId: string, bound: number): Promise<void> {
  let last = -1;
  await eventually(
    'the run to wait in its hand-over',
    async () => {
      const d = await handle.describe();
      const stable = d.runId === runId && d.historyLength >= bound && d.historyLength === last;
      last = d.historyLength;
      return stable;
    },
    60_000,
    1_500,
  );
}
