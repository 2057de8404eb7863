import type { Client, Connection } from '@temporalio/client';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { ESIGN_EVENTS } from '../esign/events.js';
import { EsignWebhook, WebhookEnvelope } from '../esign/schemas.js';
import { issuesToProblemErrors } from '../util/zod-issues.js';
import { sendProblem } from '../http/problem.js';
import { authenticate, AuthenticationError, UNAUTHENTICATED_DETAIL, type AuthMode } from './authenticate.js';
import { deliverNotification, OwnerLookupError, TemporalUnavailableError, type OwnerDirectory } from './deliver.js';
import { RateLimiter } from './rate-limit.js';
import type { ReplayStore } from './replay-store.js';

export interface BridgeServerDeps {
  client: Client;
  connection: Connection;
  auth: AuthMode;
  taskQueue: string;
  /** Who owns a provider transaction (the provider's record names its referenceId). */
  owners: OwnerDirectory;
  bodyLimitBytes: number;
  orphanAfter?: string;
  retryAfterSeconds: number;
  signalTimeoutMs: number;
  logger: boolean;
  /** Per client address on the webhook route; perSecond 0 turns it off. Default: 100 per second, bursts of 200. */
  rateLimit?: { perSecond: number; burst: number };
  /** Fastify's trustProxy (whose X-Forwarded-For names the client). */
  trustProxy?: boolean | number | string;
  /** The public port's TLS certificate and key (PEM). */
  tls?: { cert: string; key: string };
  /** Webhook ids recorded in Temporal, beyond this process's memory. */
  replay?: ReplayStore;
}

/** The bridge's two servers: the public one (webhooks, liveness) and the internal one (readiness, metrics). */
export interface BridgeServers {
  app: FastifyInstance;
  internal: FastifyInstance;
}

/** What a failed authentication costs an address, in requests, on top of the request itself. */
const FAILED_AUTH_SURCHARGE = 9;

type Outcome =
  | 'accepted'
  | 'stale'
  | 'duplicate'
  | 'ignored_event'
  | 'unauthenticated'
  | 'replayed'
  | 'rate_limited'
  | 'invalid'
  | 'too_large'
  | 'unsupported_media_type'
  | 'temporal_unavailable'
  | 'provider_unavailable';

/** Notification ids this process recently recorded: repeats are answered without another signal. */
class RecentIds {
  readonly #ids = new Set<string>();
  constructor(readonly capacity: number) {}
  has(id: string): boolean {
    return this.#ids.has(id);
  }
  add(id: string): void {
    this.#ids.add(id);
    if (this.#ids.size > this.capacity) this.#ids.delete(this.#ids.values().next().value!);
  }
}

/**
 * The webhook bridge: the one public door. A webhook is acknowledged (2xx)
 * only after Temporal accepted its signal; everything else is refused with a
 * problem+json and produces no signal. Any number of bridges can serve the
 * same endpoint, since deduplication is the workflows' job (the replay store,
 * when given, only saves them the work).
 *
 * The public server answers `POST /webhooks/esign` and `GET /healthz` (no
 * Temporal call) and nothing else; readiness (a Temporal call) and metrics are
 * on the internal server, which the caller binds to loopback or a private
 * interface.
 */
export async function buildBridgeServers(deps: BridgeServerDeps): Promise<BridgeServers> {
  const logger = deps.logger
    ? {
        redact: ['req.headers["webhook-signature"]', 'req.headers.authorization', 'req.headers["x-webhook-token"]'],
        serializers: { req: (r: { method: string; url: string; ip?: string }) => ({ method: r.method, url: r.url, ip: r.ip }) },
      }
    : false;
  const hops = deps.trustProxy;
  const options = {
    logger,
    bodyLimit: deps.bodyLimitBytes,
    ...(hops !== undefined ? { trustProxy: typeof hops === 'number' ? (_address: string, hop: number) => hop < hops : hops } : {}),
  };
  // Fastify's types follow its `https` option; the HTTPS instance is handled as a plain one below.
  const app = deps.tls
    ? (Fastify({ ...options, https: { cert: deps.tls.cert, key: deps.tls.key } }) as unknown as FastifyInstance)
    : Fastify(options);
  const internal = Fastify({ logger: false });
  const limiter = new RateLimiter(deps.rateLimit ?? { perSecond: 100, burst: 200 });
  const registry = new Registry();
  const requests = new Counter({
    name: 'esign_bridge_webhooks_total',
    help: 'Webhook requests by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const signalLatency = new Histogram({
    name: 'esign_bridge_signal_seconds',
    help: 'Time for Temporal to accept a notification signal',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const recent = new RecentIds(10_000);
  const count = (outcome: Outcome) => requests.inc({ outcome });

  // The signature covers the exact bytes: keep the raw body, parse JSON ourselves.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/([\w.+-]*\+)?json$/, { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413) {
      count('too_large');
      return sendProblem(reply, 413, `body is larger than ${deps.bodyLimitBytes} bytes`);
    }
    if (status === 415) {
      count('unsupported_media_type');
      return sendProblem(reply, 415, 'Content-Type must be application/json');
    }
    if (status >= 400 && status < 500) {
      count('invalid');
      return sendProblem(reply, status, 'malformed request');
    }
    request.log.error({ err: error }, 'bridge error');
    return sendProblem(reply, 500, 'internal error');
  });
  const notFound = (request: { method: string; url: string }, reply: Parameters<typeof sendProblem>[0]) =>
    sendProblem(reply, 404, `no route for ${request.method} ${request.url.split('?')[0]}`);
  app.setNotFoundHandler(notFound);
  internal.setNotFoundHandler(notFound);

  /** Every authentication failure, whatever the check, gets this one answer; the reason goes to the log only. */
  const unauthenticated = (
    request: { ip: string; log: { warn: (o: object, m: string) => void } },
    reply: Parameters<typeof sendProblem>[0],
    outcome: 'unauthenticated' | 'replayed',
    reason: string,
  ) => {
    count(outcome);
    limiter.charge(request.ip, FAILED_AUTH_SURCHARGE);
    request.log.warn({ reason }, 'webhook rejected: not authenticated');
    return sendProblem(reply, 401, UNAUTHENTICATED_DETAIL);
  };

  // Before the body is read: a flood is turned away at the cost of a map lookup.
  const rateLimit = async (request: { ip: string }, reply: Parameters<typeof sendProblem>[0]) => {
    const wait = limiter.take(request.ip);
    if (wait === null) return;
    count('rate_limited');
    return sendProblem(reply, 429, 'too many requests from this address; retry later', { headers: { 'retry-after': String(wait) } });
  };

  app.post('/webhooks/esign', { onRequest: rateLimit }, async (request, reply) => {
    const raw = request.body;
    if (!Buffer.isBuffer(raw)) {
      count('unsupported_media_type');
      return sendProblem(reply, 415, 'Content-Type must be application/json');
    }
    try {
      authenticate(deps.auth, request.headers, raw);
    } catch (err) {
      if (!(err instanceof AuthenticationError)) throw err;
      return unauthenticated(request, reply, 'unauthenticated', err.message);
    }
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      count('invalid');
      return sendProblem(reply, 400, 'body is not valid JSON');
    }
    const envelope = WebhookEnvelope.safeParse(json);
    if (!envelope.success) {
      count('invalid');
      return sendProblem(reply, 422, 'body is not a webhook envelope', { errors: issuesToProblemErrors(envelope.error) });
    }
    if (!(ESIGN_EVENTS as readonly string[]).includes(envelope.data.event)) {
      count('ignored_event');
      request.log.info({ event: envelope.data.event }, 'webhook event acknowledged and ignored');
      return reply.code(202).send({ status: 'ignored', event: envelope.data.event });
    }
    const notification = EsignWebhook.safeParse(json);
    if (!notification.success) {
      count('invalid');
      return sendProblem(reply, 422, `${envelope.data.event} payload is invalid`, { errors: issuesToProblemErrors(notification.error) });
    }
    const { notificationId, transaction_id } = notification.data.data;
    // A redelivery is answered without a second signal; in shared-secret mode, where nothing signed says how old a
    // request is, an id first recorded before the replay window is a replay and is refused like any forgery.
    let verdict: 'new' | 'duplicate' | 'replayed';
    try {
      verdict = deps.replay ? deps.replay.check(notificationId) : recent.has(notificationId) ? 'duplicate' : 'new';
    } catch (err) {
      // Fail closed: the provider redelivers once the store answers again.
      request.log.error({ notificationId, error: (err as Error).message }, 'replay store unavailable: asking the provider to redeliver');
      return sendProblem(reply, 503, 'cannot check the notification now; retry later', {
        headers: { 'retry-after': String(deps.retryAfterSeconds) },
      });
    }
    if (verdict === 'replayed' && deps.auth.kind === 'shared-secret')
      return unauthenticated(request, reply, 'replayed', `notification ${notificationId} was recorded before the replay window`);
    if (verdict !== 'new') {
      count('duplicate');
      return reply.code(200).send({ status: 'duplicate', notificationId });
    }
    const started = performance.now();
    try {
      const delivery = await deliverNotification(deps.client, notification.data, {
        taskQueue: deps.taskQueue,
        owners: deps.owners,
        timeoutMs: deps.signalTimeoutMs,
        ...(deps.orphanAfter ? { orphanAfter: deps.orphanAfter } : {}),
      });
      signalLatency.observe((performance.now() - started) / 1000);
      recent.add(notificationId);
      try {
        deps.replay?.record(notificationId);
      } catch (err) {
        // It is in Temporal already, which keeps it to one effect: a redelivery costs a lookup, nothing more.
        request.log.error({ notificationId, error: (err as Error).message }, 'replay store did not record the notification');
      }
      const { route, workflowId } = delivery;
      if (route === 'stale') {
        count('stale');
        request.log.info(
          { notificationId, transactionId: transaction_id, workflowId },
          'no running workflow owns this notification: stale',
        );
        return reply.code(200).send({ status: 'stale', notificationId });
      }
      count('accepted');
      request.log.info({ notificationId, transactionId: transaction_id, workflowId, route }, 'notification recorded in Temporal');
      return reply.code(200).send({ status: 'accepted', notificationId });
    } catch (err) {
      if (err instanceof OwnerLookupError) {
        count('provider_unavailable');
        request.log.error({ notificationId, error: err.message }, 'owner unknown: asking the provider to redeliver');
        return sendProblem(reply, 503, 'cannot tell who owns this transaction now; retry later', {
          headers: { 'retry-after': String(deps.retryAfterSeconds) },
        });
      }
      if (!(err instanceof TemporalUnavailableError)) throw err;
      count('temporal_unavailable');
      request.log.error({ notificationId, error: err.message }, 'Temporal unavailable: asking the provider to redeliver');
      return sendProblem(reply, 503, 'cannot record the notification now; retry later', {
        headers: { 'retry-after': String(deps.retryAfterSeconds) },
      });
    }
  });

  // Liveness only: the process answers. No Temporal call, so it is cheap enough for the public port.
  app.get('/healthz', async () => ({ status: 'ok' }));
  internal.get('/healthz', async () => ({ status: 'ok' }));

  internal.get('/readyz', async (_request, reply) => {
    try {
      await deps.connection.withDeadline(Date.now() + 2_000, () => deps.connection.workflowService.getSystemInfo({}));
      return { status: 'ready' };
    } catch {
      return sendProblem(reply, 503, 'Temporal is not reachable', { headers: { 'retry-after': String(deps.retryAfterSeconds) } });
    }
  });

  internal.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));

  return { app, internal };
}
