import { resolve } from 'node:path';
import { z } from 'zod';
import { envBool, parseEnv, splitList } from '../../../src/util/env.js';
import { assertStrongSecret, assertStrongWhsec } from '../../../src/util/secret-strength.js';
import { FaultConfig } from '../../../src/client/sandbox-control.js';

const csv = z
  .string()
  .transform(splitList)
  .pipe(z.array(z.url({ protocol: /^https?$/ })));

/** Environment variables of the sandbox, with their defaults (see README's configuration table). */
export const SandboxEnv = z.object({
  SANDBOX_HOST: z.string().default('127.0.0.1'),
  SANDBOX_PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  SANDBOX_DATA_DIR: z.string().default('.data/sandbox'),
  /** Base URL the sandbox is reached at (defaults to http(s)://host:port). */
  SANDBOX_PUBLIC_URL: z.url().optional(),
  /** Base URL of signing pages handed out by /iframe-request (spec's `{iframe_host}`). */
  SANDBOX_IFRAME_BASE_URL: z.url().optional(),
  SANDBOX_IFRAME_TTL_SECONDS: z.coerce.number().int().positive().default(300),
  /** How long an opened signing page may act (its session token). */
  SANDBOX_SIGNING_SESSION_SECONDS: z.coerce.number().int().positive().default(3600),
  /** Origins allowed to frame the signing page and to receive its messages; none: the page cannot be framed. */
  SANDBOX_EMBED_ORIGINS: z
    .string()
    .default('')
    .transform(splitList)
    .pipe(z.array(z.url({ protocol: /^https?$/ }))),
  SANDBOX_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Bearer token of the test controls (/_sandbox/*); without it they answer only on a loopback-bound sandbox. */
  SANDBOX_ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  SANDBOX_WEBHOOK_URLS: csv.default([]),
  SANDBOX_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be a whsec_ secret (base64 after the prefix)')
    .optional(),
  /** How long a webhook delivery is retried before it is marked failed. */
  SANDBOX_WEBHOOK_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(24 * 3600),
  SANDBOX_MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  SANDBOX_UPLOAD_SHAPE: z.enum(['envelope', 'array']).default('envelope'),
  SANDBOX_TLS_CERT: z.string().optional(),
  SANDBOX_TLS_KEY: z.string().optional(),
  /** JSON fault configuration, e.g. {"error5xxRate":0.05}; off when unset. */
  SANDBOX_FAULTS: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s) return undefined;
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is not JSON' });
        return z.NEVER;
      }
    })
    .pipe(FaultConfig.optional()),
  SANDBOX_LOG: envBool.default(false),
});

export interface SandboxConfig {
  host: string;
  port: number;
  dataDir: string;
  publicUrl: string | undefined;
  iframeBaseUrl: string | undefined;
  iframeTtlSeconds: number;
  signingSessionSeconds: number;
  embedOrigins: string[];
  jwtSecret: string | undefined;
  adminToken: string | undefined;
  webhookUrls: string[];
  webhookSecret: string | undefined;
  webhookMaxAgeSeconds: number;
  maxUploadBytes: number;
  uploadShape: 'envelope' | 'array';
  tls: { cert: string; key: string } | undefined;
  faults: FaultConfig | undefined;
  log: boolean;
}

export function sandboxConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  const e = parseEnv(SandboxEnv, env, 'sandbox');
  if ((e.SANDBOX_TLS_CERT === undefined) !== (e.SANDBOX_TLS_KEY === undefined)) {
    throw new Error('invalid sandbox configuration: SANDBOX_TLS_CERT and SANDBOX_TLS_KEY must be set together');
  }
  // A value copied from .env.example signs tokens anyone can forge, or webhooks no receiver accepts.
  if (e.SANDBOX_JWT_SECRET !== undefined) assertStrongSecret('SANDBOX_JWT_SECRET', e.SANDBOX_JWT_SECRET);
  if (e.SANDBOX_ADMIN_TOKEN !== undefined) assertStrongSecret('SANDBOX_ADMIN_TOKEN', e.SANDBOX_ADMIN_TOKEN);
  if (e.SANDBOX_WEBHOOK_SECRET !== undefined) assertStrongWhsec('SANDBOX_WEBHOOK_SECRET', e.SANDBOX_WEBHOOK_SECRET);
  return {
    host: e.SANDBOX_HOST,
    port: e.SANDBOX_PORT,
    dataDir: resolve(e.SANDBOX_DATA_DIR),
    publicUrl: e.SANDBOX_PUBLIC_URL,
    iframeBaseUrl: e.SANDBOX_IFRAME_BASE_URL,
    iframeTtlSeconds: e.SANDBOX_IFRAME_TTL_SECONDS,
    signingSessionSeconds: e.SANDBOX_SIGNING_SESSION_SECONDS,
    embedOrigins: e.SANDBOX_EMBED_ORIGINS.map((u) => new URL(u).origin),
    jwtSecret: e.SANDBOX_JWT_SECRET,
    adminToken: e.SANDBOX_ADMIN_TOKEN,
    webhookUrls: e.SANDBOX_WEBHOOK_URLS,
    webhookSecret: e.SANDBOX_WEBHOOK_SECRET,
    webhookMaxAgeSeconds: e.SANDBOX_WEBHOOK_MAX_AGE_SECONDS,
    maxUploadBytes: e.SANDBOX_MAX_UPLOAD_BYTES,
    uploadShape: e.SANDBOX_UPLOAD_SHAPE,
    tls: e.SANDBOX_TLS_CERT && e.SANDBOX_TLS_KEY ? { cert: e.SANDBOX_TLS_CERT, key: e.SANDBOX_TLS_KEY } : undefined,
    faults: e.SANDBOX_FAULTS,
    log: e.SANDBOX_LOG,
  };
}
