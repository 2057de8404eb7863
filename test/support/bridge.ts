import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import type { AuthMode } from '../../src/bridge/authenticate.js';
import { startBridge, type RunningBridge } from '../../src/bridge/index.js';
import { providerOwners, type OwnerDirectory } from '../../src/bridge/owners.js';
import type { EsignClient } from '../../src/esign/client.js';

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export async function startTestBridge(options: {
  address: string;
  taskQueue: string;
  secrets: string[];
  orphanAfter?: string;
  auth?: AuthMode;
  /** The provider the bridge asks who owns a transaction (the test's sandbox). */
  provider: { url: string; token: string | (() => string | Promise<string>) };
}): Promise<RunningBridge> {
  const { token } = options.provider;
  return startBridge(
    {
      host: '127.0.0.1',
      port: 0,
      auth: options.auth ?? { kind: 'standard-webhooks', secrets: options.secrets, toleranceSeconds: 300 },
      bodyLimitBytes: 64 * 1024,
      retryAfterSeconds: 1,
      signalTimeoutMs: 3_000,
      taskQueue: options.taskQueue,
      orphanAfter: options.orphanAfter,
      log: false,
      provider: {
        providerUrl: options.provider.url,
        providerToken: typeof token === 'function' ? token : () => token,
        providerCa: undefined,
      },
    },
    { connection: { address: options.address } },
  );
}

/** Standard Webhooks headers for a body, as the provider would send them. */
export function signedHeaders(secret: string, body: string, options: { id?: string; at?: Date } = {}): Record<string, string> {
  const at = options.at ?? new Date();
  const id = options.id ?? `msg_${randomUUID()}`;
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

export async function postWebhook(url: string, body: string | Buffer, headers: Record<string, string>) {
  const res = await request(`${url}/webhooks/esign`, { method: 'POST', headers, body });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers,
    text,
    json: (text ? JSON.parse(text) : undefined) as Record<string, unknown> | undefined,
  };
}

/** The bridge's owner lookup against a test sandbox, for tests that deliver a notification as the bridge does. */
export function sandboxOwners(sandbox: { client: EsignClient }): OwnerDirectory {
  return providerOwners(sandbox.client);
}
