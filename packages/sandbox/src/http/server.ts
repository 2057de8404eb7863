import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { sendProblem } from '../../../../src/http/problem.js';
import { reachOf, refuseOtherHosts } from '../../../../src/http/same-origin.js';
import type { ProviderApi } from '../api.js';
import type { SandboxControls } from '../controls.js';
import { SandboxError, type SandboxErrorKind } from '../errors.js';
import type { FaultInjector } from '../faults.js';
import type { SigningSessions } from '../signing.js';
import type { SandboxTokens } from '../tokens.js';
import { apiRoutes } from './api-routes.js';
import { docsRoutes } from './docs-routes.js';
import { pkiRoutes, type PkiService } from './pki-routes.js';
import type { ControlAccess } from './control-access.js';
import { controlRoutes } from './control-routes.js';
import { signingRoutes } from './signing-routes.js';

const STATUS: Record<SandboxErrorKind, number> = {
  bad_request: 400,
  validation: 422,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  locked: 423,
};

export interface SandboxServerDeps {
  api: ProviderApi;
  signing: SigningSessions;
  embedOrigins: () => readonly string[];
  /** The base URL in the OpenAPI document's `servers`; Host and Origin may name it (src/http/same-origin.ts). */
  publicUrl: () => string;
  /** Other URLs the sandbox is reached at (its configured signing-page base): Host and Origin may name them too. */
  alsoReachedAt?: () => readonly (string | undefined)[];
  /** The sandbox CA (PEM), served at /sandbox/ca.pem. */
  caCertificate: string;
  sealPins: readonly string[];
  /** Its CRL, OCSP responder and time-stamping authority, at /sandbox/ca.crl, /sandbox/ocsp and /sandbox/tsa. */
  pki: PkiService & { revokeSeal(): Promise<{ serialNumber: string; at: string; reason: number }> };
  controls: SandboxControls;
  control: ControlAccess;
  tokens: SandboxTokens;
  faults: FaultInjector;
  maxUploadBytes: number;
  tmpDir: string;
  logger: boolean;
  https?: { cert: string; key: string };
}

/**
 * The provider sandbox's HTTP surface, one plugin per family of routes: the
 * spec's API, the signing page, and the test controls. Routes validate, call
 * the domain, and typed errors become problem+json here.
 */
export async function buildSandboxServer(deps: SandboxServerDeps): Promise<FastifyInstance> {
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
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error);
    }
  });

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof SandboxError)
      return sendProblem(reply, STATUS[error.kind], error.message, { errors: error.errors, code: error.code });
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

  // DNS rebinding: on loopback, every route answers only to the names the sandbox is reached by. The test controls
  // and the signing page's calls also refuse cross-site writes (their plugins); the spec's API needs a bearer token.
  const reach = reachOf(app.server, {
    https: deps.https !== undefined,
    urls: () => [deps.publicUrl(), ...(deps.alsoReachedAt?.() ?? [])],
  });
  app.addHook('onRequest', refuseOtherHosts(reach));

  await app.register(apiRoutes, {
    api: deps.api,
    tokens: deps.tokens,
    faults: deps.faults,
    maxUploadBytes: deps.maxUploadBytes,
    tmpDir: deps.tmpDir,
  });
  await app.register(docsRoutes, { publicUrl: deps.publicUrl, caCertificate: deps.caCertificate, sealPins: deps.sealPins });
  await app.register(pkiRoutes, { pki: deps.pki });
  await app.register(signingRoutes, { signing: deps.signing, embedOrigins: deps.embedOrigins, reach });
  await app.register(controlRoutes, {
    controls: deps.controls,
    access: deps.control,
    tokens: deps.tokens,
    faults: deps.faults,
    tmpDir: deps.tmpDir,
    pki: deps.pki,
    reach,
  });
  return app;
}

/**
 * A JSON body, or a 400 that says what is wrong with it. Keys that look like
 * prototype pollution are refused anywhere, customData included
 * (docs/spec-gaps.md, row 40): our code never needs them, and they are how
 * such attacks arrive.
 */
function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new SandboxError('bad_request', 'the body is empty; send a JSON object');
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__' || (key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value)) {
        throw new ProtoKeyError();
      }
      return value;
    });
  } catch (err) {
    if (err instanceof ProtoKeyError) {
      throw new SandboxError(
        'bad_request',
        'JSON keys named "__proto__" (or "constructor" holding "prototype") are refused anywhere in a body, customData included: rename the key',
      );
    }
    throw new SandboxError('bad_request', `the body is not valid JSON: ${(err as Error).message}`);
  }
}

class ProtoKeyError extends Error {}
