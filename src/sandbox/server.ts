import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type IncomingFile, type Sandbox, SandboxError, type SandboxErrorKind } from './domain.js';
import { FaultConfig, type FaultInjector } from './faults.js';
import { sendProblem } from '../http/problem.js';
import { writeHashed } from '../util/streams.js';
import { renderSigningPage } from './signing-page.js';
import type { SandboxStore } from './store.js';
import type { SandboxTokens } from './tokens.js';

const STATUS: Record<SandboxErrorKind, number> = {
  bad_request: 400,
  validation: 422,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
};

export interface SandboxServerDeps {
  sandbox: Sandbox;
  store: SandboxStore;
  tokens: SandboxTokens;
  faults: FaultInjector;
  maxUploadBytes: number;
  tmpDir: string;
  logger: boolean;
  https?: { cert: string; key: string };
}

declare module 'fastify' {
  interface FastifyRequest {
    org: string;
    /** Fault injection: do the work, then drop the connection instead of answering. */
    loseResponse?: boolean;
  }
}

const require_ = createRequire(import.meta.url);

const SPEC_PREFIXES = ['/documents', '/transactions', '/iframe-request'];
const isSpecPath = (url: string) => SPEC_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`));

/** The sandbox's HTTP surface: routes validate, call the domain, map typed errors to problem+json. */
export async function buildSandboxServer(deps: SandboxServerDeps): Promise<FastifyInstance> {
  const { sandbox, tokens, faults } = deps;
  const app = Fastify({
    // Signing URLs carry tokens in their path and API calls in a header: neither is logged.
    logger: deps.logger
      ? {
          redact: ['req.headers.authorization'],
          serializers: { req: (r: FastifyRequest) => ({ method: r.method, route: r.routeOptions.url }) },
        }
      : false,
    bodyLimit: 1024 * 1024,
    ...(deps.https ? { https: deps.https } : {}),
    routerOptions: { maxParamLength: 2048 },
  });
  // JSON only: a text/plain body is refused with 415 rather than parsed.
  app.removeContentTypeParser('text/plain');
  await app.register(multipart, { limits: { fileSize: deps.maxUploadBytes, files: 50, fields: 10, parts: 60 } });
  app.decorateRequest('org', '');

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof SandboxError) return sendProblem(reply, STATUS[error.kind], error.message, { errors: error.errors });
    const status = error.statusCode ?? 500;
    if (status === 415) return sendProblem(reply, 415, 'Content-Type must be application/json (multipart/form-data for uploads)');
    if (status === 413) return sendProblem(reply, 413, 'request body is too large');
    if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || status === 400) {
      return sendProblem(reply, 400, `malformed request: ${error.message}`);
    }
    reply.log.error(error);
    return sendProblem(reply, 500, 'internal error');
  });
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, `no route for ${request.method} ${request.url.split('?')[0]}`));

  // Spec endpoints: fault injection first (a provider in trouble answers before auth), then the bearer token.
  app.addHook('onRequest', async (request, reply) => {
    if (!isSpecPath(request.url)) return;
    const { latencyMs, retryAfterSeconds } = faults.config;
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
    const fault = faults.forRequest();
    if (fault === 'reset') {
      request.raw.socket.destroy();
      return reply.hijack();
    }
    if (fault === '429') {
      return sendProblem(reply, 429, 'rate limit exceeded (fault injection)', { headers: { 'retry-after': String(retryAfterSeconds) } });
    }
    if (fault === '5xx') return sendProblem(reply, faults.pick([500, 502, 503]), 'provider fault (fault injection)');
    if (fault === 'lose-response') request.loseResponse = true;

    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    if (!match) {
      return sendProblem(reply, 401, 'missing bearer token', { headers: { 'www-authenticate': 'Bearer realm="esign"' } });
    }
    try {
      request.org = await tokens.verifyApiToken(match[1]!);
    } catch {
      return sendProblem(reply, 401, 'invalid or expired token', {
        headers: { 'www-authenticate': 'Bearer realm="esign", error="invalid_token"' },
      });
    }
  });

  // ------------------------------------------------------------- spec API

  app.post('/documents/upload', async (request, reply) => {
    if (!request.isMultipart()) return sendProblem(reply, 415, 'Content-Type must be multipart/form-data');
    const files: IncomingFile[] = [];
    try {
      for await (const part of request.files()) {
        if (part.fieldname !== 'files') {
          part.file.resume();
          throw new SandboxError('bad_request', `unexpected form part "${part.fieldname}"; PDFs go in "files"`);
        }
        await mkdir(deps.tmpDir, { recursive: true });
        const tempPath = join(deps.tmpDir, `${randomUUID()}.part`);
        const file: IncomingFile = { fileName: part.filename || 'document.pdf', tempPath, bytes: 0, sha256: '' };
        files.push(file);
        Object.assign(file, await writeHashed(part.file, tempPath));
        if (part.file.truncated) {
          throw new SandboxError('too_large', `file "${part.filename}" is larger than ${deps.maxUploadBytes} bytes`);
        }
      }
    } catch (err) {
      await Promise.all(files.map((f) => rm(f.tempPath, { force: true })));
      if ((err as FastifyError).code === 'FST_REQ_FILE_TOO_LARGE') throw new SandboxError('too_large', 'file is too large');
      throw err;
    }
    return reply.code(200).send(await sandbox.upload(request.org, files));
  });

  app.post('/transactions', async (request, reply) => reply.code(201).send(sandbox.createTransaction(request.org, request.body)));

  app.get<{ Params: { id: string } }>('/transactions/:id', async (request) => sandbox.getTransaction(request.org, request.params.id));

  app.put<{ Params: { id: string } }>('/transactions/:id', async (request, reply) =>
    reply.code(201).send(sandbox.updateTransaction(request.org, request.params.id, request.body)),
  );

  app.get('/transactions', async (request) => sandbox.listTransactions(request.org, request.query));

  app.get<{ Params: { id: string }; Querystring: { type?: unknown } }>('/transactions/:id/documents', async (request, reply) => {
    const zip = sandbox.completedZip(request.org, request.params.id, request.query.type);
    const truncate = faults.truncateZip();
    void reply.header('content-type', 'application/zip');
    void reply.header('content-length', String(zip.bytes));
    void reply.header('content-disposition', `attachment; filename="${request.params.id}.zip"`);
    if (truncate) {
      // Promise the whole file, send half of it, then cut the connection.
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, reply.getHeaders() as Record<string, string>);
      const half = createReadStream(zip.path, { end: Math.max(0, Math.floor(zip.bytes / 2) - 1) });
      half.on('end', () => res.destroy());
      half.pipe(res, { end: false });
      return;
    }
    return reply.send(createReadStream(zip.path));
  });

  app.post('/iframe-request', async (request) => sandbox.createIframeUrl(request.org, request.body));

  // -------------------------------------------------------- signing page

  const securePage = (reply: FastifyReply) =>
    reply
      .header(
        'content-security-policy',
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self' 'unsafe-inline'; worker-src 'self'; connect-src 'self'; img-src 'self' blob: data:; frame-ancestors *",
      )
      .header('permissions-policy', 'camera=*, microphone=*, fullscreen=*')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer');

  app.get<{ Params: { token: string } }>('/sign/:token', async (request, reply) => {
    const view = await sandbox.signingView(request.params.token);
    const status = 'refusal' in view ? (view.refusal === 'link_invalid' || view.refusal === 'link_expired' ? 401 : 409) : 200;
    return securePage(reply).code(status).type('text/html; charset=utf-8').send(renderSigningPage(view));
  });

  // pdf.js renders each page in the signer's browser; served from our own origin (no CDN).
  const PDFJS: Record<string, string> = { 'pdf.mjs': 'pdf.min.mjs', 'pdf.worker.mjs': 'pdf.worker.min.mjs' };
  app.get<{ Params: { file: string } }>('/sign/assets/:file', async (request, reply) => {
    const file = PDFJS[request.params.file];
    if (!file) throw new SandboxError('not_found', 'no such asset');
    return reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=86400')
      .send(createReadStream(require_.resolve(`pdfjs-dist/build/${file}`)));
  });

  app.get<{ Params: { token: string; index: string } }>('/sign/:token/documents/:index', async (request, reply) => {
    const path = await sandbox.documentForSigning(request.params.token, Number.parseInt(request.params.index, 10));
    return securePage(reply).type('application/pdf').send(createReadStream(path));
  });

  app.get<{ Params: { token: string } }>('/sign/:token/view', async (request, reply) => {
    const view = await sandbox.signingView(request.params.token);
    return securePage(reply).send(view);
  });

  const ApplyBody = z.object({ docIndex: z.number().int().nonnegative(), tagIndex: z.number().int().nonnegative(), value: z.string() });
  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/tags', async (request, reply) => {
    const body = ApplyBody.safeParse(request.body);
    if (!body.success) throw new SandboxError('validation', 'body must be {docIndex, tagIndex, value}');
    await sandbox.applyTagWithToken(request.params.token, request.params.pid, body.data.docIndex, body.data.tagIndex, body.data.value);
    return securePage(reply).code(204).send();
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/finish', async (request, reply) => {
    const result = await sandbox.finishWithToken(request.params.token, request.params.pid);
    return securePage(reply).send(result);
  });

  // ------------------------------------------------------ test control

  const TokenBody = z.object({ org: z.string().min(1).max(100).optional(), ttlSeconds: z.number().int().positive().optional() }).optional();
  app.post('/_sandbox/tokens', async (request) => {
    const body = TokenBody.safeParse(request.body ?? undefined);
    if (!body.success) throw new SandboxError('validation', 'body must be {org?, ttlSeconds?}');
    return { token: await tokens.issueApiToken(body.data?.org, body.data?.ttlSeconds) };
  });

  const SignBody = z.object({ values: z.record(z.string(), z.string()).optional() }).optional();
  app.post<{ Params: { id: string; pid: string } }>('/_sandbox/transactions/:id/participants/:pid/sign', async (request) => {
    const body = SignBody.safeParse(request.body ?? undefined);
    if (!body.success) throw new SandboxError('validation', 'body must be {values?: {"<docIndex>:<tagIndex>": value}}');
    return sandbox.signAs(request.params.id, request.params.pid, body.data?.values);
  });

  for (const [action, status] of [
    ['cancel', 'cancelled'],
    ['expire', 'expired'],
    ['delete', 'deleted'],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/_sandbox/transactions/:id/${action}`, async (request) =>
      sandbox.setTerminalStatus(request.params.id, status),
    );
  }

  // Benchmarks: complete a transaction with a ZIP of any size, streamed to disk (never buffered).
  app.addContentTypeParser('application/zip', (_request, payload, done) => done(null, payload));
  app.put<{ Params: { id: string } }>('/_sandbox/transactions/:id/completed-zip', async (request) => {
    if (!(request.body instanceof Readable)) throw new SandboxError('bad_request', 'send the ZIP as application/zip');
    await mkdir(deps.tmpDir, { recursive: true });
    const tempPath = join(deps.tmpDir, `${randomUUID()}.zip`);
    try {
      const zip = await writeHashed(request.body, tempPath);
      return await sandbox.completeWithZip(request.params.id, tempPath, zip);
    } finally {
      await rm(tempPath, { force: true });
    }
  });

  app.get<{ Params: { id: string } }>('/_sandbox/transactions/:id', async (request) => {
    const found = sandbox.inspect(request.params.id);
    if (!found) throw new SandboxError('not_found', `no transaction ${request.params.id}`);
    return found;
  });

  app.get<{ Querystring: { notificationId?: string; transactionId?: string } }>('/_sandbox/webhooks/deliveries', async (request) => ({
    data: deps.store.listDeliveries(request.query),
  }));

  // A response lost after the work was done: the client cannot tell whether its create happened.
  app.addHook('onSend', async (request, reply) => {
    if (!request.loseResponse) return;
    reply.hijack();
    request.raw.socket.destroy();
  });

  app.get('/_sandbox/faults', async () => faults.config);
  app.get('/_sandbox/faults/injected', async () => faults.injected);
  app.put('/_sandbox/faults', async (request) => {
    const parsed = FaultConfig.safeParse(request.body ?? {});
    if (!parsed.success) throw new SandboxError('validation', 'invalid fault configuration');
    faults.configure(parsed.data);
    return faults.config;
  });

  app.get('/_sandbox/stats', async () => sandbox.stats());
  app.get('/_sandbox/health', async () => ({ status: 'ok' }));

  return app;
}

export type { FastifyRequest };
