import { existsSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { SandboxControlClient } from '../client/sandbox-control.js';
import { aesGcmCodecOf } from '../codec/aes-gcm-codec.js';
import { orchestratorDataConverter } from '../codec/key-store-config.js';
import type { DataKeys } from '../codec/data-keys.js';
import { EsignClient } from '../esign/client.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';

/** Exit codes scripts can rely on. */
export const Exit = { ok: 0, failed: 1, usage: 2, notFound: 3, notCompleted: 4, unavailable: 5 } as const;

export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = Exit.failed,
  ) {
    super(message);
  }
}

export interface CliContext {
  client: Client;
  taskQueue: string;
  dataDir: string;
  /** The data keys (ESIGN_KEY_STORE, or the dev stack's), when this CLI has a key store: `esign erase`, `esign keys`. */
  dataKeys: DataKeys | undefined;
  /** The provider API client (ESIGN_PROVIDER_URL; a dev token is fetched from a sandbox when no token is set). */
  provider(): Promise<EsignClient & { baseUrl: string }>;
  close(): Promise<void>;
}

/** What main.ts hands a file of commands (templates.ts, …) to register them with: its context, printing and --json. */
export interface CliKit {
  withContext<T>(run: (ctx: CliContext) => Promise<T>): Promise<T>;
  print(value: unknown, human: () => string): void;
  json(): boolean;
}

export async function createContext(env: NodeJS.ProcessEnv = process.env): Promise<CliContext> {
  if (env.ESIGN_DATA_DIR && !existsSync(env.ESIGN_DATA_DIR)) {
    throw new CliError(
      `ESIGN_DATA_DIR "${env.ESIGN_DATA_DIR}" does not exist: point it at the dev stack's data folder (by default .data in the project folder)`,
      Exit.usage,
    );
  }
  const { connectionOptions, namespace } = loadClientConnectConfig();
  let connection: Connection;
  try {
    connection = await Connection.connect(connectionOptions);
  } catch (err) {
    throw new CliError(
      `cannot reach Temporal at ${connectionOptions.address ?? 'localhost:7233'}: ${(err as Error).message} (is \`npm run dev\` running?)`,
      Exit.unavailable,
    );
  }
  const dataConverter = orchestratorDataConverter(env, { devFallback: true });
  const client = new Client({ connection, namespace: namespace ?? 'default', ...(dataConverter ? { dataConverter } : {}) });
  let provider: (EsignClient & { baseUrl: string }) | undefined;
  return {
    client,
    taskQueue: env.ESIGN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    dataDir: env.ESIGN_DATA_DIR ?? '.data',
    dataKeys: aesGcmCodecOf(dataConverter?.payloadCodecs)?.dataKeys,
    async provider() {
      if (provider) return provider;
      const baseUrl = env.ESIGN_PROVIDER_URL ?? 'http://127.0.0.1:4010';
      const token = env.ESIGN_PROVIDER_TOKEN ?? (await sandboxDevToken(baseUrl));
      provider = Object.assign(new EsignClient({ baseUrl, token }), { baseUrl });
      return provider;
    },
    async close() {
      await provider?.close();
      await connection.close();
    },
  };
}

/** The sandbox hands out dev tokens; a real provider needs ESIGN_PROVIDER_TOKEN. */
async function sandboxDevToken(baseUrl: string): Promise<string> {
  const control = new SandboxControlClient(baseUrl);
  try {
    return await control.issueToken();
  } catch (err) {
    throw new CliError(`set ESIGN_PROVIDER_TOKEN (no sandbox answered at ${baseUrl}: ${(err as Error).message})`, Exit.unavailable);
  } finally {
    await control.close();
  }
}
