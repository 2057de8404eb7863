import { TestWorkflowEnvironment } from '@temporalio/testing';
import { esignSearchAttributes } from '../../src/definitions/search-attributes.js';
import { ensureTemporalBinaries, executableFor } from './binaries.js';

type LocalOptions = NonNullable<Parameters<typeof TestWorkflowEnvironment.createLocal>[0]>;
type ServerOptions = Omit<NonNullable<LocalOptions['server']>, 'executable'>;

export interface DevServerOptions extends ServerOptions {
  /** The Temporal CLI to run; found (or installed) by scripts/ensure-temporal.sh when absent. */
  cliPath?: string;
}

/**
 * Task queue priority and fairness, off by default in a self-hosted server: bulk sends run behind interactive
 * transactions, one batch beside another (docs/bulk-send.md; deploy/temporal/dynamicconfig.yaml for the cluster).
 */
export const PRIORITY_AND_FAIRNESS = [
  '--dynamic-config-value',
  'matching.useNewMatcher=true',
  '--dynamic-config-value',
  'matching.enableFairness=true',
  '--dynamic-config-value',
  'matching.enableMigration=true',
] as const;

/**
 * A local Temporal dev server (tests, benchmarks, the chaos run, history
 * recording) on 127.0.0.1, with the workflows' search attributes registered and
 * only its errors logged; `options` override any of these.
 *
 * The SDK gives the server 5 s to answer, a limit it does not let callers
 * change; on a loaded 2-core machine a start can miss it, so a start that timed
 * out is tried again, up to three times.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<TestWorkflowEnvironment> {
  const { cliPath, extraArgs = [], ...overrides } = options;
  const cli = cliPath ?? (await ensureTemporalBinaries('cli')).cli;
  const server = {
    executable: executableFor(cli),
    ip: '127.0.0.1',
    searchAttributes: [...esignSearchAttributes],
    log: { format: 'pretty', level: 'error' },
    // Added to, never replaced: every dev server runs the matcher production does.
    extraArgs: [...PRIORITY_AND_FAIRNESS, ...extraArgs],
    ...overrides,
  } satisfies LocalOptions['server'];
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal({ server });
    } catch (err) {
      if (attempt >= 3 || !/did not start within/.test((err as Error).message)) throw err;
    }
  }
}
