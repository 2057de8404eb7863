import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../../../../src/esign/openapi.js';

const require_ = createRequire(import.meta.url);
const ASSETS: Record<string, string> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'text/javascript' };

/** The API's OpenAPI document and a browsable reference page (Swagger UI, served from here: no CDN). Open, no token. */
export async function docsRoutes(
  app: FastifyInstance,
  { publicUrl, caCertificate, sealPins }: { publicUrl: () => string; caCertificate: string; sealPins: readonly string[] },
): Promise<void> {
  app.get('/openapi.json', async () => openApiDocument(publicUrl()));

  // The root the sandbox seals completed documents under: what a client configures as its trust anchor.
  app.get('/sandbox/ca.pem', async (_request, reply) => reply.type('application/x-pem-file').send(caCertificate));
  // The keys it seals with (SPKI SHA-256, RFC 7469's form): what a client pins, so that no other certificate the
  // CA issued passes for the sandbox's seal. One per line, for ESIGN_SEAL_PINS.
  app.get('/sandbox/pins', async (_request, reply) => reply.type('text/plain; charset=utf-8').send(`${sealPins.join('\n')}\n`));

  app.get<{ Params: { file: string } }>('/docs/assets/:file', async (request, reply) => {
    const type = ASSETS[request.params.file];
    if (!type) return reply.code(404).send();
    return reply
      .type(`${type}; charset=utf-8`)
      .header('cache-control', 'public, max-age=86400')
      .send(createReadStream(require_.resolve(`swagger-ui-dist/${request.params.file}`)));
  });

  app.get('/docs', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>E-signature provider API</title><link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>` +
          `<body><div id="api"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>` +
          `<script>SwaggerUIBundle({ url: '/openapi.json', dom_id: '#api' });</script></body></html>`,
      ),
  );
}
