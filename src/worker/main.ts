// `npm run worker`: the transaction worker on its own. SIGINT/SIGTERM start a
// graceful shutdown: no new tasks, running activities get ESIGN_SHUTDOWN_GRACE.
import { workerConfigFromEnv } from './config.js';
import { startWorker } from './start.js';

async function main(): Promise<void> {
  const config = workerConfigFromEnv();
  const started = await startWorker(config);
  process.stdout.write(`worker polling task queue "${config.taskQueue}"; provider ${config.providerUrl}; archive ${config.archiveDir}\n`);
  // The SDK installs its own SIGINT/SIGTERM handlers that call shutdown().
  await started.done;
}

main().catch((err: unknown) => {
  console.error(`worker failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
