import { z } from 'zod';
import { DURATION_PATTERN } from '../util/duration.js';
import { envBool, parseEnv, splitList } from '../util/env.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import type { AuthMode } from './authenticate.js';
import { ProviderEnv, providerSettings, type ProviderSettings } from '../esign/provider-env.js';

export const BridgeEnv = z.object({
  BRIDGE_HOST: z.string().default('127.0.0.1'),
  BRIDGE_PORT: z.coerce.number().int().min(0).max(65535).default(4020),
  /** One or more `whsec_` secrets, comma-separated (several during a rotation). */
  ESIGN_WEBHOOK_SECRETS: z.string().optional(),
  ESIGN_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
  /** For providers that cannot sign: a shared secret in a header. */
  ESIGN_WEBHOOK_SHARED_SECRET: z.string().min(16).optional(),
  ESIGN_WEBHOOK_SHARED_SECRET_HEADER: z.string().default('x-webhook-token'),
  /** Accept unauthenticated webhooks. Local development only. */
  ESIGN_WEBHOOK_INSECURE_DEV: envBool.default(false),
  BRIDGE_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  BRIDGE_RETRY_AFTER_SECONDS: z.coerce.number().int().positive().default(5),
  /** How long Temporal may take to accept a signal before the bridge answers 503 (well under the provider's own timeout). */
  BRIDGE_SIGNAL_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  ESIGN_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  ESIGN_INBOX_ORPHAN_AFTER: z.string().regex(DURATION_PATTERN, 'must be a duration such as "7 days"').optional(),
  BRIDGE_LOG: envBool.default(true),
  /** The provider's API: the bridge reads a transaction's record once to learn which workflow owns it. */
  ...ProviderEnv.shape,
});

export interface BridgeConfig {
  host: string;
  port: number;
  auth: AuthMode;
  bodyLimitBytes: number;
  retryAfterSeconds: number;
  signalTimeoutMs: number;
  taskQueue: string;
  orphanAfter: string | undefined;
  log: boolean;
  provider: ProviderSettings;
}

/**
 * `fallbackAuth` and `fallbackToken` apply when the environment configures none (the dev stack passes the
 * sandbox's webhook secret and its token minter).
 */
export function bridgeConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  fallbackAuth?: AuthMode,
  fallbackToken?: () => string | Promise<string>,
): BridgeConfig {
  const e = parseEnv(BridgeEnv, env, 'bridge');
  const secrets = splitList(e.ESIGN_WEBHOOK_SECRETS ?? '');
  for (const s of secrets)
    if (!/^whsec_[A-Za-z0-9+/=]+$/.test(s)) throw new Error('invalid bridge configuration: ESIGN_WEBHOOK_SECRETS must be whsec_ secrets');
  let auth: AuthMode;
  if (secrets.length > 0) auth = { kind: 'standard-webhooks', secrets, toleranceSeconds: e.ESIGN_WEBHOOK_TOLERANCE_SECONDS };
  else if (e.ESIGN_WEBHOOK_SHARED_SECRET)
    auth = { kind: 'shared-secret', header: e.ESIGN_WEBHOOK_SHARED_SECRET_HEADER.toLowerCase(), secret: e.ESIGN_WEBHOOK_SHARED_SECRET };
  else if (e.ESIGN_WEBHOOK_INSECURE_DEV) auth = { kind: 'insecure-dev' };
  else if (fallbackAuth) auth = fallbackAuth;
  else
    throw new Error(
      'invalid bridge configuration: set ESIGN_WEBHOOK_SECRETS (or ESIGN_WEBHOOK_SHARED_SECRET); unauthenticated webhooks need ESIGN_WEBHOOK_INSECURE_DEV=true',
    );
  return {
    host: e.BRIDGE_HOST,
    port: e.BRIDGE_PORT,
    auth,
    bodyLimitBytes: e.BRIDGE_BODY_LIMIT_BYTES,
    retryAfterSeconds: e.BRIDGE_RETRY_AFTER_SECONDS,
    signalTimeoutMs: e.BRIDGE_SIGNAL_TIMEOUT_MS,
    taskQueue: e.ESIGN_TASK_QUEUE,
    orphanAfter: e.ESIGN_INBOX_ORPHAN_AFTER,
    log: e.BRIDGE_LOG,
    provider: providerSettings(e, 'bridge', fallbackToken),
  };
}
