import { createHash, timingSafeEqual } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Logger } from 'pino';
import { z } from 'zod';
import { sendProblem } from '../http/problem.js';
import { describeIssues } from '../util/zod-issues.js';
import { PayloadErased } from './data-keys.js';

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

/** A bearer token of the codec endpoint and what it may do. */
export interface CodecToken {
  /** Names the token in the audit log (the token itself is never logged). */
  id: string;
  token: string;
  /** The namespaces (the `X-Namespace` header the Web UI and CLI send) it may decode for; `*`: all. */
  namespaces: readonly string[] | '*';
  /** May it call `/encode` (make ciphertext workers accept)? Off unless granted. */
  encode: boolean;
}

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Browser origins allowed to call (the Web UI's). */
  corsOrigins: readonly string[];
  /** One token for every namespace, decode only (`ESIGN_CODEC_AUTH_TOKEN`; `default` in the audit log). */
  authToken?: string;
  /** Tokens with their namespaces and permissions. With none (and no authToken) the endpoint is open, for loopback only. */
  tokens?: readonly CodecToken[];
  /** Where each decode and encode (and each refusal) is recorded; default: JSON lines on stdout when tokens are set. */
  audit?: Logger | false;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

const isLoopbackAddress = (address: string | undefined) =>
  address !== undefined && (/^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address));

/**
 * The remote codec endpoint (`POST /decode`, `POST /encode`) that lets the
 * Temporal Web UI and CLI show decrypted payloads to operators who may see them.
 *
 * With tokens, every `/decode` and `/encode` needs `Authorization: Bearer
 * <token>` (one answer, 401, for a missing or wrong one), the namespace in
 * `X-Namespace` must be one the token may decode for (403 otherwise), and
 * `/encode` needs a token granted it. Without tokens the endpoint is open and
 * serves both, but only to requests that reach it on a loopback address: it is
 * a development tool then. `GET /healthz` is open either way. Every decryption
 * is audited: token id, namespace, number of payloads, never their contents.
 */
export async function buildCodecServer(options: CodecServerOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
  const allowed = new Set(options.corsOrigins);
  const tokens: CodecToken[] = [
    ...(options.authToken ? [{ id: 'default', token: options.authToken, namespaces: '*' as const, encode: false }] : []),
    ...(options.tokens ?? []),
  ];
  const hashed = tokens.map((t) => ({ token: t, digest: digest(`Bearer ${t.token}`) }));
  const open = tokens.length === 0;
  const audit =
    options.audit === false ? undefined : (options.audit ?? (open ? undefined : pino({ base: { component: 'codec-endpoint' } })));

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin && allowed.has(origin)) {
      void reply.header('access-control-allow-origin', origin);
      void reply.header('vary', 'Origin');
      void reply.header('access-control-allow-credentials', 'true');
      void reply.header('access-control-allow-headers', 'content-type, x-namespace, authorization');
      void reply.header('access-control-allow-methods', 'POST, OPTIONS');
    }
    // A preflight carries no credentials: it is answered before authentication.
    if (request.method === 'OPTIONS') return reply.code(origin && allowed.has(origin) ? 204 : 403).send();
    if (origin && !allowed.has(origin)) return sendProblem(reply, 403, 'origin not allowed');
  });

  /** Who is asking, or a refusal already sent. */
  const authorise = (request: FastifyRequest, reply: FastifyReply, direction: 'encode' | 'decode') => {
    const header = request.headers['x-namespace'];
    const namespace = typeof header === 'string' ? header.slice(0, 256) : null;
    const refuse = (status: 401 | 403, detail: string, tokenId: string | null) => {
      audit?.warn(
        { event: `codec.${direction}`, outcome: 'refused', status, tokenId, namespace, ip: request.ip },
        `codec ${direction} refused`,
      );
      if (status === 401) void reply.header('www-authenticate', 'Bearer');
      return { refused: sendProblem(reply, status, detail) } as const;
    };
    if (open) {
      if (!isLoopbackAddress(request.socket.localAddress))
        return refuse(403, 'this codec endpoint has no tokens configured and answers on loopback only', null);
      return { tokenId: 'anonymous', namespace } as const;
    }
    // Every token is compared, over fixed-length digests: neither the time nor the answer says which check failed.
    const given = digest(request.headers.authorization ?? '');
    let found: CodecToken | undefined;
    for (const h of hashed) if (timingSafeEqual(given, h.digest)) found = h.token;
    if (!found) return refuse(401, 'missing or wrong bearer token', null);
    if (found.namespaces !== '*' && (namespace === null || !found.namespaces.includes(namespace)))
      return refuse(
        403,
        `this token may not ${direction} for ${namespace === null ? 'a request without X-Namespace' : `namespace "${namespace}"`}`,
        found.id,
      );
    if (direction === 'encode' && !found.encode) return refuse(403, 'this token may not encode', found.id);
    return { tokenId: found.id, namespace } as const;
  };

  /** Who each authorised request is: decided before its body is read, so a stranger's 8 MiB is never parsed. */
  const callers = new WeakMap<FastifyRequest, { tokenId: string; namespace: string | null }>();
  for (const direction of ['encode', 'decode'] as const) {
    const onRequest = async (request: FastifyRequest, reply: FastifyReply) => {
      const who = authorise(request, reply, direction);
      if ('refused' in who) return who.refused;
      callers.set(request, who);
    };
    app.post(`/${direction}`, { onRequest }, async (request, reply) => {
      const who = callers.get(request)!;
      const body = JsonPayloads.safeParse(request.body ?? {});
      if (!body.success) {
        return sendProblem(reply, 400, `body must be {payloads: [{metadata: {key: base64}, data: base64}]}: ${describeIssues(body.error)}`);
      }
      const record = {
        event: `codec.${direction}`,
        tokenId: who.tokenId,
        namespace: who.namespace,
        payloads: body.data.payloads.length,
        ip: request.ip,
      };
      try {
        const payloads = body.data.payloads.map(fromJson);
        const out = direction === 'decode' ? await decodeShowingErased(options.codec, payloads) : await options.codec.encode(payloads);
        audit?.info({ ...record, outcome: 'ok' }, `codec ${direction}`);
        return { payloads: out.map(toJson) };
      } catch (err) {
        audit?.warn({ ...record, outcome: 'failed' }, `codec ${direction} failed`);
        return sendProblem(reply, 400, `cannot ${direction}: ${(err as Error).message}`);
      }
    });
  }
  app.get('/healthz', async () => ({ status: 'ok' }));
  return app;
}

/**
 * Decodes what can be; a payload whose data key was erased reads as a JSON text saying so (the Web UI and CLI show
 * it in its place), so one erased workflow's payloads never hide a neighbour's, and nothing erased is ever shown.
 */
async function decodeShowingErased(codec: PayloadCodec, payloads: Payload[]): Promise<Payload[]> {
  try {
    return await codec.decode(payloads);
  } catch (err) {
    if (!(err instanceof PayloadErased)) throw err;
  }
  const out: Payload[] = [];
  for (const payload of payloads) {
    try {
      out.push(...(await codec.decode([payload])));
    } catch (err) {
      if (!(err instanceof PayloadErased)) throw err;
      out.push({
        metadata: { [METADATA_ENCODING_KEY]: Buffer.from('json/plain') },
        data: Buffer.from(JSON.stringify(`[erased: ${err.message}]`)),
      });
    }
  }
  return out;
}
