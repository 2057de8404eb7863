import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance } from 'fastify';
import { sendProblem } from '../../../../src/http/problem.js';
import { writeHashed } from '../../../../src/util/streams.js';
import type { IncomingFile, ProviderApi } from '../api.js';
import { SandboxError } from '../errors.js';
import { clientInfo } from './client-info.js';
import type { FaultInjector } from '../faults.js';
import type { SandboxTokens } from '../tokens.js';

export interface ApiRoutesOptions {
  api: ProviderApi;
  tokens: SandboxTokens;
  faults: FaultInjector;
  maxUploadBytes: number;
  tmpDir: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    org: string;
    /** Fault injection: do the work, then drop the connection instead of answering. */
    loseResponse?: boolean;
  }
}

/** The spec's API (sections 2-5): fault injection first (a provider in trouble answers before auth), then the bearer token. */
export async function apiRoutes(app: FastifyInstance, { api, tokens, faults, maxUploadBytes, tmpDir }: ApiRoutesOptions): Promise<void> {
  await app.register(multipart, { limits: { fileSize: maxUploadBytes, files: 50, fields: 10, parts: 60 } });
  app.decorateRequest('org', '');

  app.addHook('onRequest', async (request, reply) => {
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

  // A response lost after the work was done: the client cannot tell whether its create happened.
  app.addHook('onSend', async (request, reply) => {
    if (!request.loseResponse) return;
    reply.hijack();
    request.raw.socket.destroy();
  });

  app.post('/documents/upload', async (request, reply) => {
    if (!request.isMultipart()) return sendProblem(reply, 415, 'Content-Type must be multipart/form-data');
    const files: IncomingFile[] = [];
    try {
      for await (const part of request.files()) {
        if (part.fieldname !== 'files') {
          part.file.resume();
          throw new SandboxError('bad_request', `unexpected form part "${part.fieldname}"; PDFs go in "files"`);
        }
        await mkdir(tmpDir, { recursive: true });
        const tempPath = join(tmpDir, `${randomUUID()}.part`);
        const file: IncomingFile = { fileName: part.filename || 'document.pdf', tempPath, bytes: 0, sha256: '' };
        files.push(file);
        Object.assign(file, await writeHashed(part.file, tempPath));
        if (part.file.truncated) {
          throw new SandboxError('too_large', `file "${part.filename}" is larger than ${maxUploadBytes} bytes`);
        }
      }
    } catch (err) {
      await Promise.all(files.map((f) => rm(f.tempPath, { force: true })));
      if ((err as FastifyError).code === 'FST_REQ_FILE_TOO_LARGE') throw new SandboxError('too_large', 'file is too large');
      if (err instanceof SandboxError) throw err;
      // Found by Schemathesis: a multipart body without a boundary, or a broken one, is the caller's fault.
      throw new SandboxError('bad_request', `malformed multipart/form-data body: ${(err as Error).message}`);
    }
    return reply.code(200).send(await api.upload(request.org, files));
  });

  app.post('/transactions', async (request, reply) =>
    reply.code(201).send(api.createTransaction(request.org, request.body, clientInfo(request))),
  );

  app.get<{ Params: { id: string } }>('/transactions/:id', async (request) => api.getTransaction(request.org, request.params.id));

  app.put<{ Params: { id: string } }>('/transactions/:id', async (request, reply) =>
    reply.code(201).send(api.updateTransaction(request.org, request.params.id, request.body, clientInfo(request))),
  );

  app.get('/transactions', async (request) => api.listTransactions(request.org, request.query));

  app.get<{ Params: { id: string }; Querystring: { type?: unknown } }>('/transactions/:id/documents', async (request, reply) => {
    const zip = api.completedZip(request.org, request.params.id, request.query.type);
    void reply.header('content-type', 'application/zip');
    void reply.header('content-length', String(zip.bytes));
    void reply.header('content-disposition', `attachment; filename="${request.params.id}.zip"`);
    if (faults.truncateZip()) {
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

  app.post('/iframe-request', async (request) => api.createIframeUrl(request.org, request.body));
}
