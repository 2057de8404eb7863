// `npm run worker`: the transaction worker on its own. SIGINT/SIGTERM start a
// graceful shutdown: no new tasks, running activities get ESIGN_SHUTDOWN_GRACE.
import { codecKeysFromEnv } from '../codec/data-converter.js';
import { installObservability } from '../observability/runtime.js';
import { workerConfigFromEnv } from './config.js';
import { startWorker } from './start.js';

async function main(): Promise<void> {
  const { logger, metricsAddress } = installObservability('worker');
  const config = workerConfigFromEnv();
  if (!codecKeysFromEnv()) {
    logger.warn('ESIGN_CODEC_KEYS is not set: participant data is stored in plaintext in workflow history');
  }
  const started = await startWorker(config);
  logger.info(
    {
      taskQueue: config.taskQueue,
      provider: config.providerUrl,
      archive: config.s3 ? `s3://${config.s3.bucket}` : config.archiveDir,
      metrics: metricsAddress,
    },
    'worker polling',
  );
  // The SDK installs its own SIGINT/SIGTERM handlers that call shutdown().
  await started.done;
}

main().catch((err: unknown) => {
  console.error(`worker failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
