import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log errors only (expected activity retries log warnings); TEMPORAL_TEST_LOG_LEVEL=WARN shows them.
Runtime.install({ logger: new DefaultLogger((process.env.TEMPORAL_TEST_LOG_LEVEL as 'WARN' | 'ERROR' | undefined) ?? 'ERROR') });
