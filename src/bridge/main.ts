// `npm run bridge`: the webhook bridge on its own.
import { bridgeConfigFromEnv, startBridge } from './index.js';

async function main(): Promise<void> {
  const config = bridgeConfigFromEnv();
  const bridge = await startBridge(config);
  process.stdout.write(
    `webhook bridge listening on ${bridge.url}/webhooks/esign (auth: ${config.auth.kind}); readiness and metrics on ${bridge.internalUrl}/readyz and /metrics\n`,
  );
  const stop = () => void bridge.stop().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(`bridge failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
