import { createRequire } from 'node:module';
import { beforeAll } from 'vitest';

// Workers in tests log errors only (expected activity retries log warnings); TEMPORAL_TEST_LOG_LEVEL=WARN shows them.
// Installed before the test file's own hooks and tests, once the file has loaded the SDK's worker package: the runtime
// is made by the first worker or native connection, which only those run. A file that never loads the package (zip
// checks, schemas, docs: about forty) is spared loading it, over half a second of CPU in each test process.
beforeAll(async () => {
  const require = createRequire(import.meta.url);
  if (!(require.resolve('@temporalio/worker') in require.cache)) return;
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const { IllegalStateError } = await import('@temporalio/common');
  try {
    Runtime.install({ logger: new DefaultLogger((process.env.TEMPORAL_TEST_LOG_LEVEL as 'WARN' | 'ERROR' | undefined) ?? 'ERROR') });
  } catch (e) {
    // A test process runs file after file (vitest.config.ts, isolate: false): an earlier one installed it already.
    if (!(e instanceof IllegalStateError)) throw e;
  }
});
