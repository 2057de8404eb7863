// The harness workflow after an incompatible change (it no longer calls the
// activity first): replaying an old history against it must fail.
import { condition, defineSignal, setHandler, sleep } from '@temporalio/workflow';

export const proceed = defineSignal<[string]>('proceed');

export async function harnessWorkflow(name: string): Promise<string> {
  let suffix: string | undefined;
  setHandler(proceed, (value) => {
    suffix = value;
  });
  await sleep(10);
  await condition(() => suffix !== undefined);
  return `${name}${suffix}`;
}
