// The signing page's calls (/sign/<session>/...) act for a signer: a page on another site must not be able to
// make them (CSRF), and a name rebound to 127.0.0.1 must not reach them (DNS rebinding). Its own page sends JSON
// with its own Origin and Sec-Fetch-Site: same-origin (the browser tests in sandbox-signing-page.test.ts sign
// through it).
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SigningView } from '../../packages/sandbox/src/signing-view.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox();
});
afterAll(async () => {
  await sb?.close();
});

async function send(url: string, method: 'GET' | 'POST', headers: Record<string, string> = {}, body?: string) {
  const res = await request(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  return { status: res.statusCode, type: String(res.headers['content-type']), text };
}

const json = { 'content-type': 'application/json' };
/** Every way a browser on another site (or a rebound name) could send the call. */
const crossSite = (body: string): [string, Record<string, string>, string | undefined][] => [
  ['another origin', { ...json, origin: 'https://evil.example' }, body],
  ['a cross-site fetch', { ...json, 'sec-fetch-site': 'cross-site' }, body],
  ['an opaque origin (a sandboxed frame)', { ...json, origin: 'null' }, body],
  ['an opaque origin, same-origin by its own word', { ...json, origin: 'null', 'sec-fetch-site': 'same-origin' }, body],
  ['a body-less POST', {}, undefined],
  ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'],
  ['a text body', { 'content-type': 'text/plain' }, body],
  ['a rebound name', { ...json, host: 'rebind.attacker.example' }, body],
];

it('refuses signing calls from other sites, without JSON or to another name: the signer neither signs nor declines', async () => {
  const req = await uploadedRequest(sb.client);
  const created = await sb.client.createTransaction(req);
  const signer = req.participants[0]!;
  const url = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [signer.id] } });
  const html = await (await fetch(url)).text();
  const session = /"session":"([^"]+)"/.exec(html)![1]!;
  const base = `${sb.running.url}/sign/${session}`;
  const pid = encodeURIComponent(signer.id);
  const view = async () => JSON.parse((await send(`${base}/view`, 'GET')).text) as SigningView;
  const tags = (await view()).documents.flatMap((d) => d.tags);
  expect(tags.length).toBeGreaterThan(0);

  // Applying a tag.
  const first = JSON.stringify({ docIndex: tags[0]!.docIndex, tagIndex: tags[0]!.tagIndex, value: 'Signer1 Tester' });
  for (const [what, headers, body] of crossSite(first)) {
    const res = await send(`${base}/participants/${pid}/tags`, 'POST', headers, body);
    expect(res.status, what).toBeGreaterThanOrEqual(400);
    expect(res.status, what).toBeLessThan(500);
    expect(res.type, what).toContain('application/problem+json');
  }
  expect((await view()).documents.flatMap((d) => d.tags).every((t) => t.applied === null)).toBe(true);

  // Its own page applies every tag (JSON from its own origin), as does a program (JSON, no Origin).
  const own = { ...json, origin: new URL(sb.running.url).origin, 'sec-fetch-site': 'same-origin' };
  for (const t of tags) {
    const body = JSON.stringify({ docIndex: t.docIndex, tagIndex: t.tagIndex, value: t.suggested || 'x' });
    expect((await send(`${base}/participants/${pid}/tags`, 'POST', t === tags[0] ? json : own, body)).status).toBe(204);
  }

  // Finishing, declining and asking for a code: refused every way another site could send them.
  for (const action of ['finish', 'decline', 'authentication/code']) {
    for (const [what, headers, body] of crossSite('{}')) {
      const res = await send(`${base}/participants/${pid}/${action}`, 'POST', headers, body);
      expect(res.status, `${action}: ${what}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${action}: ${what}`).toBeLessThan(500);
    }
  }
  const record = await sb.client.getTransaction(created.id!);
  expect(record.status).toBe('esign_pending');
  expect(record.participants[0]).toMatchObject({ status: 'viewed' });
  expect(await sb.control.outbox({ transactionId: created.id! })).toEqual([]);

  // The page's own finish goes through: {} as JSON, from its own origin.
  const finished = await send(`${base}/participants/${pid}/finish`, 'POST', own, '{}');
  expect(finished.status).toBe(200);
  expect((await sb.client.getTransaction(created.id!)).participants[0]).toMatchObject({ status: 'signed' });
});
