import { TestWorkflowEnvironment } from '@temporalio/testing';

type LocalOptions = NonNullable<Parameters<typeof TestWorkflowEnvironment.createLocal>[0]>;

/**
 * A local Temporal dev server (tests, benchmarks, the chaos run, history
 * recording). The SDK gives the server 5 s to answer, a limit it does not let
 * callers change; on a loaded 2-core machine a start can miss it, so a start
 * that timed out is tried again, up to three times.
 */
export async function startDevServer(options: LocalOptions): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal(options);
    } catch (err) {
      if (attempt >= 3 || !/did not start within/.test((err as Error).message)) throw err;
    }
  }
}
