/**
 * A backend's connection to the orchestrator's Temporal, configured as the other processes are (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, the payload codec from ESIGN_CODEC_KEYS): a client ready for every function of this package,
 * or an error that names the address and what to try, where the SDK says only that it failed to connect.
 */
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { dataConverterFromEnv } from '../codec/data-converter.js';

/** Temporal did not answer at the address: nothing was sent. */
export class TemporalUnreachable extends Error {
  override readonly name = 'TemporalUnreachable';
}

export interface ConnectOptions {
  /** `host:port`; default TEMPORAL_ADDRESS, else 127.0.0.1:7233 (`npm run dev`). */
  address?: string;
  /** Default TEMPORAL_NAMESPACE, else `default`. */
  namespace?: string;
  /** Default: the codec of ESIGN_CODEC_KEYS (or ESIGN_CODEC_KEYS_FILE), plain when none is set. */
  dataConverter?: DataConverter;
  /** TLS and API keys, as the SDK takes them (Temporal Cloud). */
  connection?: Omit<ConnectionOptions, 'address'>;
  /** How long to try before giving up (default 10 s). */
  connectTimeoutMs?: number;
}

export async function connectEsignClient(options: ConnectOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<Client> {
  const address = options.address ?? env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...options.connection, address, connectTimeout: options.connectTimeoutMs ?? 10_000 });
  } catch (err) {
    throw new TemporalUnreachable(
      `cannot reach Temporal at ${address} (${(err as Error).message}): is it running (\`npm run dev\` serves 127.0.0.1:7233)? ` +
        'Set TEMPORAL_ADDRESS or pass { address }',
      { cause: err },
    );
  }
  const dataConverter = options.dataConverter ?? dataConverterFromEnv(env);
  return new Client({
    connection,
    namespace: options.namespace ?? env.TEMPORAL_NAMESPACE ?? 'default',
    ...(dataConverter ? { dataConverter } : {}),
  });
}
