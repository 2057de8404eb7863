import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log only warnings and errors, so failures stay readable.
Runtime.install({ logger: new DefaultLogger((process.env.TEMPORAL_TEST_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN') });
