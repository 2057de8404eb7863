import { startDevServer } from '../../src/temporal/dev-server.js';
import type { TestProject } from 'vitest/node';
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    temporalTestServerPath: string | undefined;
    /** For tests that run a dev server of their own (e.g. to stop and restart it). */
    temporalCliPath: string | undefined;
  }
}

/**
 * One real Temporal dev server for the whole suite, on a free port, with the
 * workflows' search attributes registered. Test files connect to it through
 * `inject('temporalAddress')` (see test/support/temporal.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const binaries = await ensureTemporalBinaries('all');
  const env = await startDevServer({ cliPath: binaries.cli });
  project.provide('temporalAddress', env.address);
  project.provide('temporalNamespace', env.namespace ?? 'default');
  project.provide('temporalTestServerPath', binaries.testServer);
  project.provide('temporalCliPath', binaries.cli);
  return async () => {
    await env.teardown();
  };
}
