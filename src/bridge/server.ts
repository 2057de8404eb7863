import type { Client, Connection } from '@temporalio/client';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { ESIGN_EVENTS } from '../esign/events.js';
import { EsignWebhook, WebhookEnvelope } from '../esign/schemas.js';
import { issuesToProblemErrors } from '../util/zod-issues.js';
import { sendProblem } from '../http/problem.js';
import { authenticate, AuthenticationError, type AuthMode } from './authenticate.js';
import { deliverNotification, OwnerLookupError, TemporalUnavailableError, type OwnerDirectory } from './deliver.js';

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
}

type Outcome =
  | 'accepted'
  | 'stale'
  | 'duplicate'
  | 'ignored_event'
  | 'unauthenticated'
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
 * problem+json and produces no signal. Stateless: any number of bridges can
 * serve the same endpoint, since deduplication is the workflows' job.
 */
export async function buildBridgeServer(deps: BridgeServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger
      ? {
          redact: ['req.headers["webhook-signature"]', 'req.headers.authorization', 'req.headers["x-webhook-token"]'],
          serializers: { req: (r: { method: string; url: string }) => ({ method: r.method, url: r.url }) },
        }
      : false,
    bodyLimit: deps.bodyLimitBytes,
  });
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
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, `no route for ${request.method} ${request.url.split('?')[0]}`));

  app.post('/webhooks/esign', async (request, reply) => {
    const raw = request.body;
    if (!Buffer.isBuffer(raw)) {
      count('unsupported_media_type');
      return sendProblem(reply, 415, 'Content-Type must be application/json');
    }
    try {
      authenticate(deps.auth, request.headers, raw);
    } catch (err) {
      if (!(err instanceof AuthenticationError)) throw err;
      count('unauthenticated');
      request.log.warn({ reason: err.message }, 'webhook rejected: not authenticated');
      return sendProblem(reply, 401, err.message);
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
    if (recent.has(notificationId)) {
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

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    try {
      await deps.connection.withDeadline(Date.now() + 2_000, () => deps.connection.workflowService.getSystemInfo({}));
      return { status: 'ready' };
    } catch {
      return sendProblem(reply, 503, 'Temporal is not reachable', { headers: { 'retry-after': String(deps.retryAfterSeconds) } });
    }
  });

  app.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));

  return app;
}
