import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { dataConverterFromEnv } from '../codec/data-converter.js';
import { tracingPluginFromEnv } from '../observability/tracing.js';
import type { BridgeConfig } from './config.js';
import { buildBridgeServer } from './server.js';
import { EsignClient } from '../esign/client.js';
import { providerOwners } from './owners.js';

export { bridgeConfigFromEnv, type BridgeConfig } from './config.js';

export interface RunningBridge {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the bridge. The Temporal connection is lazy: the bridge comes up even
 * while Temporal is down, answers 503 (so the provider redelivers), and
 * recovers by itself when Temporal is back.
 */
export async function startBridge(
  config: BridgeConfig,
  temporal: { connection?: ConnectionOptions; namespace?: string } = {},
): Promise<RunningBridge> {
  const fromEnv = temporal.connection ? undefined : loadClientConnectConfig();
  const connection = Connection.lazy(temporal.connection ?? fromEnv?.connectionOptions);
  const dataConverter = dataConverterFromEnv();
  const tracing = tracingPluginFromEnv('esign-bridge');
  const client = new Client({
    connection,
    namespace: temporal.namespace ?? fromEnv?.namespace ?? 'default',
    ...(dataConverter ? { dataConverter } : {}),
    ...(tracing ? { plugins: [tracing] } : {}),
  });
  const provider = new EsignClient({
    baseUrl: config.provider.providerUrl,
    token: config.provider.providerToken,
    ...(config.provider.providerCa ? { ca: config.provider.providerCa } : {}),
  });
  const app = await buildBridgeServer({
    client,
    connection,
    owners: providerOwners(provider, { timeoutMs: config.signalTimeoutMs }),
    auth: config.auth,
    taskQueue: config.taskQueue,
    bodyLimitBytes: config.bodyLimitBytes,
    retryAfterSeconds: config.retryAfterSeconds,
    signalTimeoutMs: config.signalTimeoutMs,
    logger: config.log,
    ...(config.orphanAfter ? { orphanAfter: config.orphanAfter } : {}),
  });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await connection.close();
    await provider.close();
    if ((err as { code?: string }).code === 'EADDRINUSE') {
      throw new Error(`bridge port ${config.port} on ${config.host} is already in use (set BRIDGE_PORT)`, { cause: err });
    }
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    async stop() {
      await app.close();
      await connection.close();
      await provider.close();
    },
  };
}
