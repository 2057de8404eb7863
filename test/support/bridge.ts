import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import type { AuthMode } from '../../src/bridge/authenticate.js';
import { startBridge, type RunningBridge } from '../../src/bridge/index.js';

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export async function startTestBridge(options: {
  address: string;
  taskQueue: string;
  secrets: string[];
  orphanAfter?: string;
  auth?: AuthMode;
}): Promise<RunningBridge> {
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
