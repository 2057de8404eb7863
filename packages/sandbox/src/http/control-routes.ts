import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { writeHashed } from '../../../../src/util/streams.js';
import type { SandboxControls } from '../controls.js';
import { SandboxError } from '../errors.js';
import { FaultConfig } from '../../../../src/client/sandbox-control.js';
import type { FaultInjector } from '../faults.js';
import type { SandboxTokens } from '../tokens.js';
import { sendProblem } from '../../../../src/http/problem.js';
import { refuseCrossSiteWrites, type Reach } from '../../../../src/http/same-origin.js';
import type { ControlAccess } from './control-access.js';
import { DeclineBody } from './signing-routes.js';

export interface ControlRoutesOptions {
  controls: SandboxControls;
  access: ControlAccess;
  tokens: SandboxTokens;
  faults: FaultInjector;
  tmpDir: string;
  /** The sandbox's CA, for the key-compromise control. */
  pki: { revokeSeal(): Promise<{ serialNumber: string; at: string; reason: number }> };
  /** How the sandbox is reached: writes from other sites are refused (src/http/same-origin.ts). */
  reach: () => Reach;
}

const TokenBody = z.object({ org: z.string().min(1).max(100).optional(), ttlSeconds: z.number().int().positive().optional() }).optional();
const SignBody = z.object({ values: z.record(z.string(), z.string()).optional() }).optional();
const FORCED_ENDS = [
  ['cancel', 'cancelled'],
  ['expire', 'expired'],
  ['delete', 'deleted'],
] as const;

/**
 * The provider sandbox's test controls (`/_sandbox/*`, docs/sandbox.md); SandboxControlClient is their client.
 * Open without a token on loopback, so a write must not come from a browser on another site. A write needs a JSON
 * body (a ZIP for completed-zip) or a bearer token.
 */
export async function controlRoutes(
  app: FastifyInstance,
  { controls, access, tokens, faults, tmpDir, pki, reach }: ControlRoutesOptions,
): Promise<void> {
  app.addHook('onRequest', refuseCrossSiteWrites(reach, { bodyTypes: ['application/json', 'application/zip'] }));
  app.addHook('onRequest', async (request, reply) => {
    if (request.url === '/_sandbox/health') return;
    const refusal = access.check(request.headers.authorization);
    if (refusal)
      return sendProblem(
        reply,
        refusal.status,
        refusal.detail,
        refusal.status === 401 ? { headers: { 'www-authenticate': 'Bearer realm="esign-sandbox-admin"' } } : {},
      );
  });

  app.post('/_sandbox/tokens', async (request) => {
    const body = TokenBody.safeParse(request.body ?? undefined);
    if (!body.success) throw new SandboxError('validation', 'body must be {org?, ttlSeconds?}');
    return { token: await tokens.issueApiToken(body.data?.org, body.data?.ttlSeconds) };
  });

  app.post<{ Params: { id: string; pid: string } }>('/_sandbox/transactions/:id/participants/:pid/sign', async (request) => {
    const body = SignBody.safeParse(request.body ?? undefined);
    if (!body.success) throw new SandboxError('validation', 'body must be {values?: {"<docIndex>:<tagIndex>": value}}');
    return controls.signAs(request.params.id, request.params.pid, body.data?.values);
  });

  app.post<{ Params: { id: string; pid: string } }>('/_sandbox/transactions/:id/participants/:pid/decline', async (request) => {
    const body = DeclineBody.safeParse(request.body ?? {});
    if (!body.success) throw new SandboxError('validation', 'body must be {reason?: string of at most 500 characters}');
    return controls.declineAs(request.params.id, request.params.pid, body.data.reason);
  });

  for (const [action, status] of FORCED_ENDS) {
    app.post<{ Params: { id: string } }>(`/_sandbox/transactions/:id/${action}`, async (request) =>
      controls.forceEnd(request.params.id, status),
    );
  }

  // Benchmarks: complete a transaction with a ZIP of any size, streamed to disk (never buffered).
  app.addContentTypeParser('application/zip', (_request, payload, done) => done(null, payload));
  app.put<{ Params: { id: string } }>('/_sandbox/transactions/:id/completed-zip', async (request) => {
    if (!(request.body instanceof Readable)) throw new SandboxError('bad_request', 'send the ZIP as application/zip');
    await mkdir(tmpDir, { recursive: true });
    const tempPath = join(tmpDir, `${randomUUID()}.zip`);
    try {
      const zip = await writeHashed(request.body, tempPath);
      return await controls.completeWithZip(request.params.id, tempPath, zip);
    } finally {
      await rm(tempPath, { force: true });
    }
  });

  app.get<{ Params: { id: string } }>('/_sandbox/transactions/:id', async (request) => {
    const found = controls.inspect(request.params.id);
    if (!found) throw new SandboxError('not_found', `no transaction ${request.params.id}`);
    return found;
  });

  app.get<{ Querystring: { notificationId?: string; transactionId?: string } }>('/_sandbox/webhooks/deliveries', async (request) => ({
    data: controls.deliveries(request.query),
  }));

  app.get<{ Params: { id: string } }>('/_sandbox/transactions/:id/audit-trail', async (request) => ({
    data: controls.auditTrail(request.params.id),
  }));

  // The outbox holds one-time codes: it is as closed as the other controls, and never logged.
  app.get<{ Querystring: { to?: string; transactionId?: string } }>('/_sandbox/outbox', async (request, reply) =>
    reply.header('cache-control', 'no-store').send({ data: controls.outbox(request.query) }),
  );
  app.get('/_sandbox/outbox.html', async (_request, reply) =>
    reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(OUTBOX_PAGE),
  );

  app.get('/_sandbox/faults', async () => faults.config);
  app.get('/_sandbox/faults/injected', async () => faults.injected);
  app.put('/_sandbox/faults', async (request) => {
    const parsed = FaultConfig.safeParse(request.body ?? {});
    if (!parsed.success) throw new SandboxError('validation', 'invalid fault configuration');
    faults.configure(parsed.data);
    return faults.config;
  });

  // The provider's sealing key leaked: its certificate is revoked (keyCompromise) and every seal from now on is
  // made with a revoked certificate, which an archive must refuse (docs/sandbox.md).
  app.post('/_sandbox/pki/seal/revoke', async () => pki.revokeSeal());
  app.get('/_sandbox/stats', async () => controls.stats());
  app.get('/_sandbox/health', async () => ({ status: 'ok' }));
}

/** A developer's view of the outbox: newest message first, refreshed every two seconds. */
const OUTBOX_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sandbox outbox</title>
<style>body{font-family:system-ui,sans-serif;margin:16px;background:#f9fafb}article{background:#fff;border:1px solid #d1d5db;border-radius:6px;padding:10px 12px;margin:8px 0}
h1{font-size:20px}.meta{color:#6b7280;font-size:12px}pre{white-space:pre-wrap;font-family:inherit;margin:6px 0 0}</style></head>
<body><h1>Sandbox outbox</h1><p class="meta">E-mails and text messages the provider sandbox would have sent. Filter: <input id="to" placeholder="recipient"></p><main id="list"></main>
<script>
const list = document.getElementById('list'); const to = document.getElementById('to');
async function load() {
  const q = to.value ? '?to=' + encodeURIComponent(to.value) : '';
  const res = await fetch('/_sandbox/outbox' + q, { cache: 'no-store' });
  const { data } = await res.json();
  list.textContent = '';
  for (const m of data) {
    const a = document.createElement('article'); a.dataset.kind = m.kind; a.dataset.to = m.to;
    const meta = document.createElement('div'); meta.className = 'meta'; meta.textContent = m.sentAt + ' · ' + m.channel + ' to ' + m.to + ' · ' + m.kind;
    const subject = document.createElement('strong'); subject.textContent = m.subject;
    const body = document.createElement('pre'); body.textContent = m.body;
    a.append(meta, subject, body); list.appendChild(a);
  }
}
to.addEventListener('input', load); load(); setInterval(load, 2000);
</script></body></html>`;
