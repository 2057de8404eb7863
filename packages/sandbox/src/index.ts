import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { installOutboundGuard, permitOutbound } from '../../../src/http/outbound.js';
import { sandboxConfigFromEnv as readConfigFromEnv, type SandboxConfig } from './config.js';
import { ProviderApi } from './api.js';
import { CompletionPipeline } from './completion.js';
import { SandboxControls } from './controls.js';
import { FaultInjector } from './faults.js';
import { controlPlaneAccess } from './http/control-access.js';
import { buildSandboxServer } from './http/server.js';
import { EventOutbox } from './outbox.js';
import { DEFAULT_AUTHENTICATION_OPTIONS, SignerAuthentication } from './authentication.js';
import { SandboxMailer } from './mailer.js';
import { SandboxSeal } from './seal.js';
import { SigningSessions } from './signing.js';
import { SandboxStore } from './store.js';
import { SandboxTokens } from './tokens.js';
import { WebhookDispatcher } from './webhooks.js';

export type { SandboxConfig } from './config.js';

/** Marks a configuration read from the environment: the one a sandbox process (npm run sandbox, the dev stack) runs with. */
const OWN_PROCESS = Symbol('esign.sandbox.ownProcess');

/**
 * The sandbox's configuration from the environment (config.ts), marked as its process's own: a sandbox started with
 * it guards the whole process's outbound requests (startSandbox), which a sandbox a test starts in its own process
 * with `sandboxConfig` must not do to that process.
 */
export function sandboxConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  return Object.assign(readConfigFromEnv(env), { [OWN_PROCESS]: true });
}

export interface RunningSandbox {
  /** Base URL of the API (and of signing pages unless configured otherwise). */
  url: string;
  /** The `whsec_` secret webhooks are signed with. */
  webhookSecret: string;
  /** The root CA completed documents are sealed under (PEM; also at /sandbox/ca.pem). */
  caCertificate: string;
  /** The keys it seals with, as a worker pins them (ESIGN_SEAL_PINS); also GET /sandbox/pins. */
  sealPins: readonly string[];
  /** The test controls, in process (tests and tools across processes use `/_sandbox/*` through SandboxControlClient). */
  controls: SandboxControls;
  faults: FaultInjector;
  /** Webhook URLs can change while running (tests point them at their receivers). */
  webhookUrls: string[];
  /** Origins that may frame the signing page; they can change while running, too. */
  embedOrigins: string[];
  /** Who may use /_sandbox/* (for the start-up line). */
  controlAccess: string;
  issueToken(org?: string, ttlSeconds?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Defaults for everything but the data directory: handy for tests and the dev stack. */
export function sandboxConfig(overrides: Partial<SandboxConfig> & { dataDir: string }): SandboxConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    publicUrl: undefined,
    iframeBaseUrl: undefined,
    iframeTtlSeconds: 300,
    signingSessionSeconds: 3600,
    embedOrigins: [],
    jwtSecret: undefined,
    adminToken: undefined,
    webhookUrls: [],
    webhookSecret: undefined,
    webhookMaxAgeSeconds: 24 * 3600,
    maxUploadBytes: 25 * 1024 * 1024,
    uploadShape: 'envelope',
    tls: undefined,
    faults: undefined,
    log: false,
    ...overrides,
  };
}

/**
 * Starts the provider sandbox: the spec's API, signing pages, and durable
 * webhook delivery, on one port. Secrets not given in the configuration are
 * generated once and kept in the data directory, so they survive restarts.
 */
export async function startSandbox(config: SandboxConfig): Promise<RunningSandbox> {
  const webhookUrls = [...config.webhookUrls];
  // The sandbox requests nothing but its webhooks, to the URLs it is configured with (the bridge, often on loopback
  // or the cluster network, so they may be internal). In its own process every other request is refused, whatever
  // asks (src/http/outbound.ts); the seal itself fetches nothing for a certificate in a document (seal.ts).
  const withdraw = permitOutbound(() => ({ allow: webhookUrls.map(origin), internal: webhookUrls.map(origin) }));
  if ((config as { [OWN_PROCESS]?: boolean })[OWN_PROCESS]) installOutboundGuard();
  try {
    return await start(config, webhookUrls, withdraw);
  } catch (err) {
    withdraw();
    throw err;
  }
}

/** A webhook URL's origin, or nothing for one that is not a URL (its deliveries fail on their own). */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

async function start(config: SandboxConfig, webhookUrls: string[], withdraw: () => void): Promise<RunningSandbox> {
  const store = new SandboxStore(config.dataDir);
  const seal = await SandboxSeal.open(store.pkiDir);
  const jwtSecret = config.jwtSecret ?? store.ensureMeta('jwt_secret', randomBytes(32).toString('base64url'));
  const webhookSecret = config.webhookSecret ?? store.ensureMeta('webhook_secret', `whsec_${randomBytes(32).toString('base64')}`);
  const tokens = new SandboxTokens(jwtSecret);
  const faults = new FaultInjector(config.faults ?? {});
  const embedOrigins = [...config.embedOrigins];
  const log = config.log
    ? (line: Record<string, unknown>) => console.log(JSON.stringify({ component: 'sandbox-webhooks', ...line }))
    : undefined;
  const dispatcher = new WebhookDispatcher(store, {
    secret: webhookSecret,
    maxAgeMs: config.webhookMaxAgeSeconds * 1000,
    faults,
    ...(log ? { log } : {}),
  });

  let baseUrl = config.publicUrl ?? '';
  const now = () => new Date();
  const mailer = new SandboxMailer(store, now);
  const api = new ProviderApi(store, tokens, {
    mailer,
    uploadShape: config.uploadShape,
    signingBaseUrl: () => (config.iframeBaseUrl ?? baseUrl).replace(/\/+$/, ''),
    iframeTtlSeconds: config.iframeTtlSeconds,
    now,
  });
  const outbox = new EventOutbox(store, { webhookUrls: () => webhookUrls, onEnqueued: () => dispatcher.kick() });
  const completion = new CompletionPipeline(store, { outbox, seal, now });
  const auth = new SignerAuthentication(store, mailer, { ...DEFAULT_AUTHENTICATION_OPTIONS, now });
  const signing = new SigningSessions(
    store,
    tokens,
    completion,
    outbox,
    { auth, mailer },
    { now, sessionTtlSeconds: config.signingSessionSeconds },
  );
  const controls = new SandboxControls(store, signing, completion, outbox, now);

  const access = controlPlaneAccess(config);
  let app: FastifyInstance | undefined;
  try {
    app = await buildSandboxServer({
      api,
      signing,
      embedOrigins: () => embedOrigins,
      publicUrl: () => baseUrl,
      // The signing page's iframe host is one of the sandbox's names too (Host and Origin checks).
      alsoReachedAt: () => [config.iframeBaseUrl],
      caCertificate: seal.caCertificate,
      sealPins: seal.sealPins,
      pki: seal,
      controls,
      control: access,
      tokens,
      faults,
      maxUploadBytes: config.maxUploadBytes,
      tmpDir: join(config.dataDir, 'tmp'),
      logger: config.log,
      ...(config.tls ? { https: config.tls } : {}),
    });
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await app?.close();
    store.close();
    if ((err as { code?: string }).code === 'EADDRINUSE') {
      throw new Error(`sandbox port ${config.port} on ${config.host} is already in use (set SANDBOX_PORT)`, { cause: err });
    }
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  baseUrl = (config.publicUrl ?? `${config.tls ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(
    /\/+$/,
    '',
  );

  await completion.recover();
  dispatcher.start();
  const server = app;
  return {
    url: baseUrl,
    webhookSecret,
    caCertificate: seal.caCertificate,
    sealPins: seal.sealPins,
    controls,
    faults,
    webhookUrls,
    embedOrigins,
    controlAccess: access.describe(),
    issueToken: (org, ttl) => tokens.issueApiToken(org, ttl),
    async stop() {
      await dispatcher.stop();
      // A browser can keep a connection busy for minutes (a signing page's document stream it stopped reading):
      // requests under way get two seconds, then every connection is closed, so a stop never hangs on a browser.
      const closing = server.close();
      const force = setTimeout(() => server.server.closeAllConnections(), 2_000);
      await closing;
      clearTimeout(force);
      store.close();
      withdraw();
    },
  };
}
