// Baseline T: the transaction workflow's shape (six activities and one signal)
// with activities that do nothing: the ceiling Temporal allows on this machine.
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { noopActivities } from './baseline-activities.js';

const acts = proxyActivities<typeof noopActivities>({ startToCloseTimeout: '1 minute' });
export const doneSignal = defineSignal('done');

export async function baselineTransaction(): Promise<void> {
  let done = false;
  setHandler(doneSignal, () => {
    done = true;
  });
  await acts.upload();
  await acts.create();
  await acts.register();
  await condition(() => done);
  await acts.confirm();
  await acts.archive();
  await acts.report();
}
