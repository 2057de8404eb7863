import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import { DURATION_PATTERN, durationToMs } from '../util/duration.js';
import { envBool, parseEnv, splitList } from '../util/env.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import type { AuthMode } from './authenticate.js';
import { ProviderEnv, providerSettings, type ProviderSettings } from '../esign/provider-env.js';
import { assertStrongSecret, assertStrongWhsec } from '../util/secret-strength.js';

const duration = z.string().regex(DURATION_PATTERN, 'must be a duration such as "7 days"');

export const BridgeEnv = z.object({
  BRIDGE_HOST: z.string().default('127.0.0.1'),
  BRIDGE_PORT: z.coerce.number().int().min(0).max(65535).default(4020),
  /**
   * Readiness (`/readyz`, a Temporal call) and `/metrics` are served here, never on the public port. Loopback by
   * default; the port is any free one unless set (it is printed at start): set it for probes and Prometheus.
   */
  BRIDGE_INTERNAL_HOST: z.string().default('127.0.0.1'),
  BRIDGE_INTERNAL_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  /** HTTPS on the public port: PEM certificate (chain) and private key files, both or neither. */
  BRIDGE_TLS_CERT_FILE: z.string().min(1).optional(),
  BRIDGE_TLS_KEY_FILE: z.string().min(1).optional(),
  /** Webhook requests per second per client address (sustained; 0 turns the limit off), and the burst. */
  BRIDGE_RATE_LIMIT: z.coerce.number().min(0).default(100),
  BRIDGE_RATE_LIMIT_BURST: z.coerce.number().int().positive().default(200),
  /**
   * Behind a load balancer: which hops to believe in X-Forwarded-For for the client's address (rate limit, logs):
   * `true`, a number of hops, or comma-separated addresses/CIDRs. Unset: the TCP peer is the client.
   */
  BRIDGE_TRUST_PROXY: z.string().optional(),
  /** SQLite file of the webhook ids recorded in Temporal (replay protection across restarts and replicas). */
  BRIDGE_REPLAY_STORE: z.string().min(1).optional(),
  /** A recorded id seen again within this window is a redelivery (duplicate); later, a replay (401; shared-secret mode). */
  BRIDGE_REPLAY_WINDOW: duration.default('3 days'),
  /** How long recorded ids are kept. */
  BRIDGE_REPLAY_RETENTION: duration.default('90 days'),
  /** One or more `whsec_` secrets, comma-separated (several during a rotation). */
  ESIGN_WEBHOOK_SECRETS: z.string().optional(),
  ESIGN_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
  /** For providers that cannot sign: a shared secret in a header. */
  ESIGN_WEBHOOK_SHARED_SECRET: z.string().min(1).optional(),
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
  ESIGN_INBOX_ORPHAN_AFTER: duration.optional(),
  BRIDGE_LOG: envBool.default(true),
  /** The provider's API: the bridge reads a transaction's record once to learn which workflow owns it. */
  ...ProviderEnv.shape,
});

export interface BridgeConfig {
  host: string;
  port: number;
  /** Where readiness and metrics are served (default: loopback, any free port). */
  internal?: { host: string; port: number };
  /** PEM certificate and key: the public port speaks HTTPS. */
  tls?: { cert: string; key: string };
  /** Per client address on the webhook route (default: 100 per second, bursts of 200). */
  rateLimit?: { perSecond: number; burst: number };
  /** Fastify's trustProxy: whose X-Forwarded-For to believe. */
  trustProxy?: boolean | number | string;
  /** Webhook ids recorded in Temporal, kept across restarts (required with a shared secret). */
  replay?: { file: string; windowMs: number; retentionMs: number };
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
const isLoopback = (host: string) => host === 'localhost' || /^127\./.test(host) || host === '::1' || host === '::ffff:127.0.0.1';

function trustProxy(value: string | undefined): boolean | number | string | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^(true|yes|on)$/i.test(v)) return true;
  if (/^(false|no|off)$/i.test(v)) return undefined;
  if (/^\d+$/.test(v)) return Number(v);
  for (const item of splitList(v))
    if (isIP(item.split('/')[0]!) === 0)
      throw new Error(
        `invalid bridge configuration: BRIDGE_TRUST_PROXY: "${item}" is not an address or CIDR (or use true, or a number of hops)`,
      );
  return v;
}

function readPem(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `invalid bridge configuration: ${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      {
        cause: err,
      },
    );
  }
}

/**
 * `fallbackAuth` and `fallbackToken` apply when the environment configures none (the dev stack passes the
 * sandbox's webhook secret and its token minter). Secrets from the environment must be strong: a placeholder from
 * `.env.example`, a short or a low-variety value stops the bridge at start with a message naming the variable.
 */
export function bridgeConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  fallbackAuth?: AuthMode,
  fallbackToken?: () => string | Promise<string>,
): BridgeConfig {
  const e = parseEnv(BridgeEnv, env, 'bridge');
  const invalid = (message: string) => new Error(`invalid bridge configuration: ${message}`);
  const secrets = splitList(e.ESIGN_WEBHOOK_SECRETS ?? '');
  try {
    for (const s of secrets) assertStrongWhsec('ESIGN_WEBHOOK_SECRETS', s);
    if (secrets.length === 0 && e.ESIGN_WEBHOOK_SHARED_SECRET)
      assertStrongSecret(
        'ESIGN_WEBHOOK_SHARED_SECRET',
        e.ESIGN_WEBHOOK_SHARED_SECRET,
        'Generate one with `openssl rand -base64 32` and give it to the provider',
      );
  } catch (err) {
    throw invalid((err as Error).message);
  }
  let auth: AuthMode;
  if (secrets.length > 0) auth = { kind: 'standard-webhooks', secrets, toleranceSeconds: e.ESIGN_WEBHOOK_TOLERANCE_SECONDS };
  else if (e.ESIGN_WEBHOOK_SHARED_SECRET)
    auth = { kind: 'shared-secret', header: e.ESIGN_WEBHOOK_SHARED_SECRET_HEADER.toLowerCase(), secret: e.ESIGN_WEBHOOK_SHARED_SECRET };
  else if (e.ESIGN_WEBHOOK_INSECURE_DEV) auth = { kind: 'insecure-dev' };
  else if (fallbackAuth) auth = fallbackAuth;
  else
    throw invalid(
      'set ESIGN_WEBHOOK_SECRETS (or ESIGN_WEBHOOK_SHARED_SECRET); unauthenticated webhooks need ESIGN_WEBHOOK_INSECURE_DEV=true',
    );
  if (auth.kind === 'insecure-dev' && !isLoopback(e.BRIDGE_HOST))
    throw invalid(
      `ESIGN_WEBHOOK_INSECURE_DEV accepts unauthenticated webhooks, so the bridge must listen on loopback only, not BRIDGE_HOST=${e.BRIDGE_HOST}`,
    );
  if (auth.kind === 'shared-secret' && !e.BRIDGE_REPLAY_STORE)
    throw invalid(
      'a shared-secret webhook carries nothing that ages, so replays are refused by remembering webhook ids: set BRIDGE_REPLAY_STORE to a SQLite file on a volume every bridge replica shares (e.g. /data/bridge/replay.sqlite)',
    );
  if (durationToMs(e.BRIDGE_REPLAY_RETENTION) < durationToMs(e.BRIDGE_REPLAY_WINDOW))
    throw invalid('BRIDGE_REPLAY_RETENTION must be at least BRIDGE_REPLAY_WINDOW');
  if (Boolean(e.BRIDGE_TLS_CERT_FILE) !== Boolean(e.BRIDGE_TLS_KEY_FILE))
    throw invalid('set both BRIDGE_TLS_CERT_FILE and BRIDGE_TLS_KEY_FILE, or neither');
  return {
    host: e.BRIDGE_HOST,
    port: e.BRIDGE_PORT,
    internal: { host: e.BRIDGE_INTERNAL_HOST, port: e.BRIDGE_INTERNAL_PORT },
    ...(e.BRIDGE_TLS_CERT_FILE && e.BRIDGE_TLS_KEY_FILE
      ? {
          tls: {
            cert: readPem('BRIDGE_TLS_CERT_FILE', e.BRIDGE_TLS_CERT_FILE),
            key: readPem('BRIDGE_TLS_KEY_FILE', e.BRIDGE_TLS_KEY_FILE),
          },
        }
      : {}),
    rateLimit: { perSecond: e.BRIDGE_RATE_LIMIT, burst: e.BRIDGE_RATE_LIMIT_BURST },
    ...(trustProxy(e.BRIDGE_TRUST_PROXY) !== undefined ? { trustProxy: trustProxy(e.BRIDGE_TRUST_PROXY)! } : {}),
    ...(e.BRIDGE_REPLAY_STORE
      ? {
          replay: {
            file: e.BRIDGE_REPLAY_STORE,
            windowMs: durationToMs(e.BRIDGE_REPLAY_WINDOW),
            retentionMs: durationToMs(e.BRIDGE_REPLAY_RETENTION),
          },
        }
      : {}),
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
