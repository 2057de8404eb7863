import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { sendProblem } from '../http/problem.js';
import { describeIssues } from '../util/zod-issues.js';

/**
 * Payloads as the Temporal Web UI and CLI send them to a remote codec: proto
 * JSON, bytes in base64. Proto JSON omits empty fields, so `{}` is an empty
 * list (what the CLI sends for a query without arguments); unknown fields are ignored.
 */
const JsonPayloads = z.looseObject({
  payloads: z
    .array(z.looseObject({ metadata: z.record(z.string(), z.string()).nullish(), data: z.string().nullish() }))
    .max(10_000)
    .default([]),
});
type JsonPayload = z.infer<typeof JsonPayloads>['payloads'][number];

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Browser origins allowed to call (the Web UI's). */
  corsOrigins: readonly string[];
  /** When set, requests need `Authorization: Bearer <token>`. */
  authToken?: string;
}

/**
 * The remote codec endpoint (`POST /decode`, `POST /encode`) that lets the
 * Temporal Web UI and CLI show decrypted payloads to operators who may see them.
 */
export async function buildCodecServer(options: CodecServerOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
  const allowed = new Set(options.corsOrigins);

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin && allowed.has(origin)) {
      void reply.header('access-control-allow-origin', origin);
      void reply.header('vary', 'Origin');
      void reply.header('access-control-allow-credentials', 'true');
      void reply.header('access-control-allow-headers', 'content-type, x-namespace, authorization');
      void reply.header('access-control-allow-methods', 'POST, OPTIONS');
    }
    if (request.method === 'OPTIONS') return reply.code(origin && allowed.has(origin) ? 204 : 403).send();
    if (origin && !allowed.has(origin)) return sendProblem(reply, 403, 'origin not allowed');
    if (options.authToken) {
      const given = Buffer.from(request.headers.authorization ?? '');
      const expected = Buffer.from(`Bearer ${options.authToken}`);
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return sendProblem(reply, 401, 'missing or wrong bearer token');
    }
  });

  for (const direction of ['encode', 'decode'] as const) {
    app.post(`/${direction}`, async (request, reply) => {
      const body = JsonPayloads.safeParse(request.body ?? {});
      if (!body.success) {
        return sendProblem(reply, 400, `body must be {payloads: [{metadata: {key: base64}, data: base64}]}: ${describeIssues(body.error)}`);
      }
      try {
        const out = await options.codec[direction](body.data.payloads.map(fromJson));
        return { payloads: out.map(toJson) };
      } catch (err) {
        return sendProblem(reply, 400, `cannot ${direction}: ${(err as Error).message}`);
      }
    });
  }
  app.get('/healthz', async () => ({ status: 'ok' }));
  return app;
}
