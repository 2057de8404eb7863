import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeWorkflowBundle } from '../../tools/support/bundle.js';

/**
 * `npm run test:cluster`'s one workflow bundle, as `npm test` has one (test/setup/temporal-server.ts): the topology,
 * the chaos run and the cluster benchmark start their workers with it (ESIGN_WORKFLOW_BUNDLE, read by
 * tools/support/bundle.ts's prebuiltBundle), rather than each bundling the workflows again, seconds of CPU each time.
 * Set before the test processes are forked, which inherit it.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-cluster-bundle-'));
  process.env.ESIGN_WORKFLOW_BUNDLE = await writeWorkflowBundle(dir);
  return async () => {
    delete process.env.ESIGN_WORKFLOW_BUNDLE;
    await rm(dir, { recursive: true, force: true });
  };
}
