import type { FastifyInstance } from 'fastify';

/** What the sandbox CA answers about the certificates it issued. */
export interface RevocationService {
  crl(): Promise<Buffer>;
  ocspAnswer(request: Uint8Array): Promise<Buffer>;
}

const MAX_OCSP_REQUEST = 64 * 1024;

/**
 * The sandbox CA's revocation service, open like its certificate: the CRL
 * (RFC 5280, DER) and an OCSP responder (RFC 6960 over HTTP, POST), for
 * validators that check a seal's certificates online rather than from the
 * validation data the seal carries.
 */
export async function pkiRoutes(app: FastifyInstance, { revocation }: { revocation: RevocationService }): Promise<void> {
  app.addContentTypeParser('application/ocsp-request', { parseAs: 'buffer', bodyLimit: MAX_OCSP_REQUEST }, (_request, body, done) =>
    done(null, body),
  );
  app.get('/sandbox/ca.crl', async (_request, reply) => reply.type('application/pkix-crl').send(await revocation.crl()));
  app.post<{ Body: Buffer }>('/sandbox/ocsp', async (request, reply) => {
    if (!Buffer.isBuffer(request.body)) {
      return reply.code(415).type('application/problem+json').send({
        type: 'about:blank',
        title: 'Unsupported Media Type',
        status: 415,
        detail: 'send an OCSP request as application/ocsp-request',
      });
    }
    return reply.type('application/ocsp-response').send(await revocation.ocspAnswer(request.body));
  });
}
