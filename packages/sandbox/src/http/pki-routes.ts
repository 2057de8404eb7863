import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { sendProblem } from '../../../../src/http/problem.js';

/** What the sandbox's PKI answers online: its CA about the certificates it issued, its TSA with time-stamps. */
export interface PkiService {
  crl(): Promise<Buffer>;
  ocspAnswer(request: Uint8Array): Promise<Buffer>;
  timestampAnswer(request: Uint8Array): Promise<Buffer>;
}

/** Either request is a few hundred bytes; a larger body is not one, and is refused (413) before it is read. */
const MAX_OCSP_REQUEST = 64 * 1024;
const MAX_TIMESTAMP_REQUEST = 64 * 1024;

/**
 * The sandbox's PKI services, open like its CA certificate: the CRL (RFC
 * 5280, DER) and an OCSP responder (RFC 6960 over HTTP, POST), for
 * validators that check a seal's certificates online rather than from the
 * validation data the seal carries; and its time-stamping authority (RFC
 * 3161 over HTTP, 3.4), for archives that renew a seal's evidence with new
 * document time-stamps long after it was sealed.
 */
export async function pkiRoutes(app: FastifyInstance, { pki }: { pki: PkiService }): Promise<void> {
  app.addContentTypeParser('application/ocsp-request', { parseAs: 'buffer', bodyLimit: MAX_OCSP_REQUEST }, (_request, body, done) =>
    done(null, body),
  );
  app.addContentTypeParser('application/timestamp-query', { parseAs: 'buffer', bodyLimit: MAX_TIMESTAMP_REQUEST }, (_request, body, done) =>
    done(null, body),
  );
  // Scoped to these routes: the server-wide 415 tells API callers to send JSON, which would mislead a PKI client.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.statusCode === 415) return unsupported(reply, request.routeOptions.url === '/sandbox/tsa' ? TSA_TYPE : OCSP_TYPE);
    throw error;
  });

  app.get('/sandbox/ca.crl', async (_request, reply) => reply.type('application/pkix-crl').send(await pki.crl()));
  app.post<{ Body: Buffer }>('/sandbox/ocsp', async (request, reply) => {
    if (!Buffer.isBuffer(request.body)) return unsupported(reply, OCSP_TYPE);
    return reply.type('application/ocsp-response').send(await pki.ocspAnswer(request.body));
  });
  // Every TimeStampReq, however malformed, gets a TimeStampResp (a rejection says why), as RFC 3161 2.4.2 has it.
  app.post<{ Body: Buffer }>('/sandbox/tsa', async (request, reply) => {
    if (!Buffer.isBuffer(request.body)) return unsupported(reply, TSA_TYPE);
    return reply.type('application/timestamp-reply').send(await pki.timestampAnswer(request.body));
  });
}

const OCSP_TYPE = { request: 'application/ocsp-request', what: 'an OCSP request' };
const TSA_TYPE = { request: 'application/timestamp-query', what: 'an RFC 3161 TimeStampReq (DER)' };

function unsupported(reply: FastifyReply, type: { request: string; what: string }): FastifyReply {
  return sendProblem(reply, 415, `send ${type.what} as ${type.request}`);
}
