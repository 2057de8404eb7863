import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { refuseCrossSiteWrites, type Reach } from '../../../../src/http/same-origin.js';
import { SandboxError } from '../errors.js';
import { clientInfo } from './client-info.js';
import { renderSigningPage } from '../signing-page.js';
import type { SigningRefusal, SigningSessions } from '../signing.js';

const require_ = createRequire(import.meta.url);

// pdf.js renders each page in the signer's browser; served from our own origin (no CDN).
const PDFJS: Record<string, string> = { 'pdf.mjs': 'pdf.min.mjs', 'pdf.worker.mjs': 'pdf.worker.min.mjs' };

/** Shared with the test controls' decline. */
export const DeclineBody = z.object({ reason: z.string().max(500).optional() });
const AuthenticateBody = z.object({
  step: z.enum(['personal-password', 'two-factor-authentication', 'kba', 'credential-analysis']),
  answer: z.string().max(500),
});
const ApplyBody = z.object({ docIndex: z.number().int().nonnegative(), tagIndex: z.number().int().nonnegative(), value: z.string() });

/** Security headers of every signing response; only the configured integrator origins may frame the page. */
function securePage(reply: FastifyReply, embedOrigins: readonly string[]): FastifyReply {
  const ancestors = embedOrigins.length > 0 ? embedOrigins.join(' ') : "'none'";
  return reply
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; script-src 'self' 'unsafe-inline'; worker-src 'self'; connect-src 'self'; img-src 'self' blob: data:; frame-ancestors ${ancestors}`,
    )
    .header('permissions-policy', 'camera=*, microphone=*, fullscreen=*')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer');
}

/**
 * The embedded signing page (spec 7) and the calls it makes; the signing address's token is the credential.
 * Its calls are JSON from its own origin: a write from another site, or one without a JSON body, is refused.
 */
export async function signingRoutes(
  app: FastifyInstance,
  { signing, embedOrigins, reach }: { signing: SigningSessions; embedOrigins: () => readonly string[]; reach: () => Reach },
): Promise<void> {
  app.addHook('onRequest', refuseCrossSiteWrites(reach));
  const secure = (reply: FastifyReply) => securePage(reply, embedOrigins());
  app.get<{ Params: { token: string } }>('/sign/:token', async (request, reply) => {
    const view = await signing.open(request.params.token, clientInfo(request));
    return secure(reply).code(refusalStatus(view)).type('text/html; charset=utf-8').send(renderSigningPage(view, embedOrigins()));
  });

  app.get<{ Params: { file: string } }>('/sign/assets/:file', async (request, reply) => {
    const file = PDFJS[request.params.file];
    if (!file) throw new SandboxError('not_found', 'no such asset');
    return reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=86400')
      .send(createReadStream(require_.resolve(`pdfjs-dist/build/${file}`)));
  });

  app.get<{ Params: { token: string; index: string } }>('/sign/:token/documents/:index', async (request, reply) => {
    const path = await signing.documentForSigning(request.params.token, Number.parseInt(request.params.index, 10));
    return secure(reply).type('application/pdf').send(createReadStream(path));
  });

  app.get<{ Params: { token: string } }>('/sign/:token/view', async (request, reply) => {
    const view = await signing.view(request.params.token);
    return secure(reply).send(view);
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/tags', async (request, reply) => {
    const body = ApplyBody.safeParse(request.body);
    if (!body.success) throw new SandboxError('validation', 'body must be {docIndex, tagIndex, value}');
    const { docIndex, tagIndex, value } = body.data;
    await signing.applyTag(request.params.token, request.params.pid, docIndex, tagIndex, value, clientInfo(request));
    return secure(reply).code(204).send();
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/authenticate', async (request, reply) => {
    const body = AuthenticateBody.safeParse(request.body);
    if (!body.success) throw new SandboxError('validation', 'body must be {step, answer}');
    await signing.authenticate(request.params.token, request.params.pid, body.data.step, body.data.answer, clientInfo(request));
    return secure(reply).code(204).send();
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/authentication/code', async (request, reply) => {
    await signing.sendCode(request.params.token, request.params.pid, clientInfo(request));
    return secure(reply).code(204).send();
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/decline', async (request, reply) => {
    const body = DeclineBody.safeParse(request.body ?? {});
    if (!body.success) throw new SandboxError('validation', 'body must be {reason?: string of at most 500 characters}');
    return secure(reply).send(await signing.decline(request.params.token, request.params.pid, body.data.reason, clientInfo(request)));
  });

  app.post<{ Params: { token: string; pid: string } }>('/sign/:token/participants/:pid/finish', async (request, reply) => {
    const result = await signing.finish(request.params.token, request.params.pid, clientInfo(request));
    return secure(reply).send(result);
  });
}

/** 401 for an address that is not (or no longer) valid, 410 for a used link, 409 for a transaction that cannot be signed. */
function refusalStatus(view: { refusal: SigningRefusal } | object): number {
  if (!('refusal' in view)) return 200;
  if (view.refusal === 'link_invalid' || view.refusal === 'link_expired') return 401;
  return view.refusal === 'link_used' ? 410 : 409;
}
