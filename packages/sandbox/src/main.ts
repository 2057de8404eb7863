// `npm run sandbox`: the provider sandbox on its own.
import { sandboxConfigFromEnv, startSandbox } from './index.js';

async function main(): Promise<void> {
  const config = sandboxConfigFromEnv();
  const running = await startSandbox(config);
  const token = await running.issueToken();
  process.stdout.write(
    [
      `eSign provider sandbox listening on ${running.url}`,
      `  data dir:        ${config.dataDir}`,
      `  dev API token:   ${token}`,
      `  webhook secret:  ${running.webhookSecret}`,
      `  test controls:   ${running.controlAccess}`,
      `  webhook URLs:    ${config.webhookUrls.join(', ') || '(none; set SANDBOX_WEBHOOK_URLS)'}`,
      `  try: curl -H "Authorization: Bearer <token>" ${running.url}/transactions`,
      '',
    ].join('\n'),
  );
  const shutdown = () => {
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  console.error(`sandbox failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
