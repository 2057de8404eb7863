import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { aesGcmCodecOf } from '../codec/aes-gcm-codec.js';
import { orchestratorDataConverter } from '../codec/key-store-config.js';
import { tracingPluginFromEnv } from '../observability/tracing.js';
import type { BridgeConfig } from './config.js';
import { buildBridgeServers } from './server.js';
import { EsignClient } from '../esign/client.js';
import { providerOwners } from './owners.js';
import { openReplayStore, type ReplayStore } from './replay-store.js';

export { bridgeConfigFromEnv, type BridgeConfig } from './config.js';

export interface RunningBridge {
  /** The public server: `POST /webhooks/esign` and `GET /healthz` only. */
  url: string;
  /** The internal server: `GET /readyz` (Temporal reachable) and `GET /metrics`. */
  internalUrl: string;
  stop(): Promise<void>;
}

const urlOf = (scheme: string, host: string, port: number) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
const portOf = (app: { server: { address(): unknown } }, fallback: number) => {
  const address = app.server.address();
  return typeof address === 'object' && address ? (address as { port: number }).port : fallback;
};

/**
 * Starts the bridge. The Temporal connection is lazy: the bridge comes up even
 * while Temporal is down, answers 503 (so the provider redelivers), and
 * recovers by itself when Temporal is back.
 */
export async function startBridge(
  config: BridgeConfig,
  temporal: { connection?: ConnectionOptions; namespace?: string } = {},
): Promise<RunningBridge> {
  let replay: ReplayStore | undefined;
  try {
    replay = config.replay ? openReplayStore(config.replay) : undefined;
  } catch (err) {
    throw new Error(`cannot open the replay store BRIDGE_REPLAY_STORE=${config.replay!.file}: ${(err as Error).message}`, { cause: err });
  }
  const fromEnv = temporal.connection ? undefined : loadClientConnectConfig();
  const connection = Connection.lazy(temporal.connection ?? fromEnv?.connectionOptions);
  const dataConverter = orchestratorDataConverter();
  // Signals are encrypted under their workflow's data key: a key store that is not there is said at start.
  await aesGcmCodecOf(dataConverter?.payloadCodecs)?.dataKeys?.store();
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
  const { app, internal } = await buildBridgeServers({
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
    ...(config.rateLimit ? { rateLimit: config.rateLimit } : {}),
    ...(config.trustProxy !== undefined ? { trustProxy: config.trustProxy } : {}),
    ...(config.tls ? { tls: config.tls } : {}),
    ...(replay ? { replay } : {}),
  });
  const internalAddress = config.internal ?? { host: '127.0.0.1', port: 0 };
  const close = async () => {
    await app.close();
    await internal.close();
    replay?.close();
    await connection.close();
    await provider.close();
  };
  for (const [server, host, port, variable] of [
    [app, config.host, config.port, 'BRIDGE_PORT'],
    [internal, internalAddress.host, internalAddress.port, 'BRIDGE_INTERNAL_PORT'],
  ] as const) {
    try {
      await server.listen({ host, port });
    } catch (err) {
      await close();
      if ((err as { code?: string }).code === 'EADDRINUSE') {
        throw new Error(`bridge port ${port} on ${host} is already in use (set ${variable})`, { cause: err });
      }
      throw err;
    }
  }
  return {
    url: urlOf(config.tls ? 'https' : 'http', config.host, portOf(app, config.port)),
    internalUrl: urlOf('http', internalAddress.host, portOf(internal, internalAddress.port)),
    stop: close,
  };
}
