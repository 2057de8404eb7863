/**
 * An example integrator, served by the dev stack: a backend that starts a
 * transaction, asks the workflow for signing URLs (the `issueSigningUrl`
 * update) and receives the orchestrator's signed events at its callback; and
 * a page that embeds the signing iframe the recommended way and shows the
 * page's messages and the callback events as they arrive. Read it as the
 * smallest correct integration (docs/integrator-events.md).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { getEsignTransaction, startEsignTransaction } from '../../src/client/transactions.js';
import { sendProblem } from '../../src/http/problem.js';
import { reachOf, refuseCrossSiteWrites, refuseOtherHosts } from '../../src/http/same-origin.js';
import { issueSigningUrlUpdate } from '../../src/definitions/transaction.js';

export interface HostPageOptions {
  client: Client;
  taskQueue: string;
  /** The whsec_ secret the worker signs events with (ESIGN_CALLBACK_SECRETS). */
  callbackSecret: string;
  /** Origin of the provider's signing pages: messages from any other origin are ignored. */
  signingOrigin: string;
  /** A PDF the sample transaction signs, under one of the worker's document roots. */
  samplePdfPath: string;
}

export interface RunningHostPage {
  url: string;
  /** Callback events received and verified, newest last. */
  events: { id: string; type: string; data: unknown }[];
  close(): Promise<void>;
}

const Ask = z.object({ referenceId: z.string().min(1).max(128), participantId: z.string().min(1).max(128) });

export async function startHostPage(options: HostPageOptions, listen: { host: string; port: number }): Promise<RunningHostPage> {
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 64 * 1024 });
  const events: RunningHostPage['events'] = [];
  const verifier = new Webhook(options.callbackSecret);
  let self = '';

  // It starts transactions and hands out signing URLs for any referenceId: only its own page and programs on this
  // machine may ask. Host must name it (DNS rebinding), and a write must be JSON and not from another site (CSRF).
  const reach = reachOf(app.server, { https: false });
  app.addHook('onRequest', refuseOtherHosts(reach));
  app.addHook('onRequest', refuseCrossSiteWrites(reach));

  // The callback: verify the signature over the exact bytes, then deduplicate by webhook-id.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.post('/callbacks', async (request, reply) => {
    try {
      const event = verifier.verify(request.body as string, request.headers as Record<string, string>) as { type: string; data: unknown };
      const id = String(request.headers['webhook-id']);
      if (!events.some((e) => e.id === id)) events.push({ id, type: event.type, data: event.data });
      return reply.code(204).send();
    } catch {
      return sendProblem(reply, 401, 'signature does not verify');
    }
  });
  app.get('/api/events', async () => ({ events }));

  // The integrator's own backend calls: start a sample transaction, get a signing URL for a participant.
  app.post('/api/transactions', async () => {
    const referenceId = `host-${randomUUID()}`;
    // The participants' ids are ours to give; a signing-URL update then waits in the workflow for the provider's transaction.
    const signers = [
      { id: randomUUID(), email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' },
      { id: randomUUID(), email: 'alan@example.com', firstName: 'Alan', lastName: 'Turing' },
    ];
    await startEsignTransaction(
      options.client,
      {
        referenceId,
        documents: [
          {
            title: 'Sample agreement',
            source: { path: options.samplePdfPath },
            tags: [
              { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 36, page: 0, signerIndex: 0 },
              { type: 'SIGNATURETEMPLATE', x: 340, y: 120, width: 200, height: 36, page: 0, signerIndex: 1 },
            ],
          },
        ],
        participants: signers.map((p) => ({ ...p, authenticationType: 'none' as const, twoFactorContact: 'email' as const })),
        notifyParticipants: { email: false },
        callbackUrl: `${self}/callbacks`,
      },
      { taskQueue: options.taskQueue },
    );
    return { referenceId, participants: signers.map((p) => ({ id: p.id, name: `${p.firstName} ${p.lastName}` })) };
  });
  app.post('/api/signing-url', async (request, reply) => {
    const ask = Ask.safeParse(parseJson(request.body as string));
    if (!ask.success) return sendProblem(reply, 400, 'body must be {referenceId, participantId}');
    const handle = getEsignTransaction(options.client, ask.data.referenceId);
    return handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [ask.data.participantId] }] });
  });

  app.get('/', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        `default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; frame-src ${options.signingOrigin}`,
      )
      .send(page(options.signingOrigin)),
  );

  self = await app.listen(listen);
  return { url: self, events, close: () => app.close() };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function page(signingOrigin: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Example integrator</title>
<style>body{font-family:system-ui,sans-serif;margin:16px;display:grid;grid-template-columns:1fr 320px;gap:16px}
iframe{width:100%;height:900px;border:1px solid #ccc} li{font-family:monospace;font-size:12px}</style></head>
<body><main><h1>Example integrator</h1>
<p><button id="start">Start a sample transaction</button> <span id="ref"></span></p>
<p id="signers"></p>
<p id="notice" role="status"></p>
<!-- The spec's recommended attributes: camera and microphone for identity checks, fullscreen. -->
<iframe id="signer" title="Signing" allow="camera *; microphone *; fullscreen *"></iframe></main>
<aside><h2>Signing page</h2><ol id="page-events"></ol><h2>Callback events</h2><ol id="callback-events"></ol></aside>
<script>
const SIGNING_ORIGIN = ${JSON.stringify(signingOrigin)};
const post = (path, body) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body || {}) }).then((r) => r.json());
const item = (list, text) => { const li = document.createElement('li'); li.textContent = text; document.getElementById(list).appendChild(li); };
const notice = (text) => { document.getElementById('notice').textContent = text; };
let current;
// Who the iframe signs for, and when its URL was last renewed: a page that keeps expiring is not renewed in a loop.
let signing = null;
const renewals = [];
async function load(participantId) {
  signing = participantId;
  const { url } = await post('/api/signing-url', { referenceId: current.referenceId, participantId });
  document.getElementById('signer').src = url;
}
// Only the provider's signing pages may talk to this page; each message type says what to do (docs/integrator-events.md).
addEventListener('message', async (e) => {
  if (e.origin !== SIGNING_ORIGIN || !e.data || e.data.source !== 'esign-sandbox') return;
  const m = e.data;
  item('page-events', m.reason ? m.type + ' (' + m.reason + ')' : m.type);
  if (m.type === 'esign:expired' && signing) {
    // The link was used or expired (a reload, a tab left open): a fresh URL, at most three a minute.
    const now = Date.now();
    while (renewals.length > 0 && now - renewals[0] > 60000) renewals.shift();
    if (renewals.length >= 3) return notice('The signing link keeps expiring: reload this page to try again.');
    renewals.push(now);
    notice('The signing link had expired (' + m.reason + '): a fresh one was loaded.');
    await load(signing);
  } else if (m.type === 'esign:ended') {
    signing = null;
    notice('This transaction can no longer be signed (' + m.reason + '); its outcome arrives as a callback event.');
  } else if (m.type === 'esign:error' && m.reason === 'not_sent' && outcome) {
    // A cancelled transaction is withdrawn to draft at the provider, which the page cannot tell from an edit; the
    // callback event can.
    signing = null;
    notice('This transaction can no longer be signed (' + outcome + ').');
  } else if (m.type === 'esign:error') {
    notice('The signing page reports ' + m.reason + ' (' + m.action + '): ' + m.message);
  }
});
document.getElementById('start').addEventListener('click', async () => {
  current = await post('/api/transactions');
  document.getElementById('ref').textContent = current.referenceId;
  const box = document.getElementById('signers'); box.textContent = '';
  for (const p of current.participants) {
    const b = document.createElement('button'); b.textContent = 'Sign as ' + p.name; b.dataset.participant = p.id;
    b.addEventListener('click', () => { notice(''); return load(p.id); });
    box.appendChild(b);
  }
});
let seen = 0;
// How the current transaction ended, once its callback event came.
let outcome = null;
setInterval(async () => {
  const { events } = await fetch('/api/events').then((r) => r.json());
  for (const e of events.slice(seen)) {
    item('callback-events', e.type);
    if (current && e.data && e.data.referenceId === current.referenceId && /^transaction\\.(?!archive_invalid)/.test(e.type)) outcome = e.type.slice(12);
  }
  seen = events.length;
}, 500);
</script></body></html>`;
}
