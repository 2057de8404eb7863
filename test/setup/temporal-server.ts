import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../../tools/temporal/dev-server.js';
import type { TestProject } from 'vitest/node';
import { ensureTemporalBinaries } from '../../tools/temporal/binaries.js';
import { writeWorkflowBundle } from '../../tools/support/bundle.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';

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
  // The workflows bundled once for every worker the suite starts, in its processes and the ones they launch
  // (createEsignWorker and the worker's config read ESIGN_WORKFLOW_BUNDLE): bundling takes seconds of CPU, and
  // about forty files start workers. Set before the test processes are forked, which inherit it.
  const bundleDir = await mkdtemp(join(tmpdir(), 'esign-test-bundle-'));
  const bundling = writeWorkflowBundle(bundleDir);
  // One sandbox PKI (CA, seal and time-stamping keys) for the run, copied into each sandbox's data dir
  // (test/support/sandbox.ts, tools/support/sandbox-process.ts) rather than generated for each test file.
  const pki = join(bundleDir, 'sandbox-pki');
  const pkiMade = SandboxSeal.open(pki);
  const binaries = await ensureTemporalBinaries('all');
  const env = await startDevServer({ cliPath: binaries.cli });
  process.env.ESIGN_WORKFLOW_BUNDLE = await bundling;
  await pkiMade;
  process.env.ESIGN_TEST_SANDBOX_PKI = pki;
  // Every temporary file and directory the tests make (sample PDFs, archives, forged evidence, the checkers' own)
  // goes under this run's directory, which the teardown removes: files need not clean up after each test, and a
  // test that fails midway leaves nothing behind in the machine's /tmp. Set here, after the dev server started,
  // and before the test processes are forked, which inherit it (os.tmpdir() reads TMPDIR).
  const scratch = join(bundleDir, 'tmp');
  await mkdir(scratch);
  const machineTmp = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  project.provide('temporalAddress', env.address);
  project.provide('temporalNamespace', env.namespace ?? 'default');
  project.provide('temporalTestServerPath', binaries.testServer);
  project.provide('temporalCliPath', binaries.cli);
  return async () => {
    // Put back for what vitest's own process does next (a watch-mode rerun makes its files under os.tmpdir()).
    if (machineTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = machineTmp;
    await env.teardown();
    await rm(bundleDir, { recursive: true, force: true });
  };
}
