import { mkdir } from 'node:fs/promises';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';
import { StubHttpServer } from '../support/stub-http.js';

const ARTIFACTS = 'test-artifacts';
let sb: TestSandbox;
let host: StubHttpServer;
let browser: Browser;

beforeAll(async () => {
  sb = await startTestSandbox({ iframeTtlSeconds: 900 });
  // The integrator's page: embeds the signing URL in an iframe as the spec recommends and records its messages.
  host = await StubHttpServer.start();
  // Only the integrator's origin may frame the signing page and receive its messages.
  sb.running.embedOrigins.push(host.url);
  host.handler = (req, res) => {
    const src = new URL(req.url ?? '/', 'http://host').searchParams.get('src') ?? '';
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><html><body><h1>Integrator page</h1>
<iframe id="signer" src="${src.replace(/"/g, '&quot;')}" width="900" height="1000" allow="camera *; microphone *; fullscreen *"></iframe>
<script>window.__events = []; addEventListener('message', (e) => window.__events.push(e.data));</script></body></html>`);
  };
  browser = await launchChromium();
  await mkdir(ARTIFACTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await sb?.close();
});

async function openEmbedded(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1000, height: 1100 } });
  await page.goto(`${host.url}/?src=${encodeURIComponent(url)}`);
  return page;
}

// Functions given as strings run in the browser; Node's types know nothing of the DOM.
const events = (page: Page) => page.evaluate<{ type: string }[]>('window.__events');
type BrowserGlobals = { getComputedStyle(el: unknown): { backgroundColor: string } };
const backgroundOf = (el: Locator) => el.evaluate((e) => (globalThis as unknown as BrowserGlobals).getComputedStyle(e).backgroundColor);

describe('signing page', () => {
  it('lets a signer apply each tag in an iframe and complete the transaction, telling the parent frame', async () => {
    const request = await uploadedRequest(sb.client, { signers: 1 });
    const created = await sb.client.createTransaction(request);
    const signer = request.participants[0]!;
    const url = await sb.client.createIframeUrl({
      type: 'esign',
      style: { primaryColor: '#ff0000', background: '00ff00' },
      data: { esignId: created.esignId!, participantIds: [signer.id] },
    });
    const page = await openEmbedded(url);
    const frame = page.frameLocator('#signer');
    await expect.poll(() => events(page)).toContainEqual(expect.objectContaining({ type: 'esign:loaded', esignId: created.esignId }));

    // The document itself is drawn (pdf.js, one canvas per page), under its tags; the page re-renders once it is.
    await frame.locator('body[data-pages-rendered="true"]').waitFor();
    expect(await frame.locator('.page canvas').count()).toBe(1);
    const finish = frame.locator('button.finish');
    expect(await finish.isDisabled()).toBe(true); // required tags not yet applied
    // '#ff0000' is applied; '00ff00' lacks '#' and is not (spec section 7).
    expect(await backgroundOf(finish)).toBe('rgb(255, 0, 0)');
    expect(await backgroundOf(frame.locator('body'))).not.toBe('rgb(0, 255, 0)');

    const tags = frame.locator('button.tag');
    expect(await tags.count()).toBe(2);
    for (let i = 0; i < 2; i++) await tags.nth(i).click();
    await expect.poll(async () => (await events(page)).filter((e) => e.type === 'esign:tag-applied').length).toBe(2);
    await expect.poll(() => frame.locator('button.tag.applied').count()).toBe(2);
    expect(await frame.locator('button.tag.applied').first().textContent()).toBe('Signer1 Tester');

    await finish.click();
    // The last signature completes the transaction (every PDF sealed at B-LTA) before the page hears back.
    await expect
      .poll(() => events(page), { timeout: 30_000 })
      .toContainEqual(expect.objectContaining({ type: 'esign:completed', transactionId: created.id }));
    expect((await events(page)).map((e) => e.type)).toEqual([
      'esign:loaded',
      'esign:tag-applied',
      'esign:tag-applied',
      'esign:participant-signed',
      'esign:completed',
    ]);
    await expect.poll(() => frame.locator('#status').textContent(), { timeout: 30_000 }).toContain('Thank you');
    await page.screenshot({ path: `${ARTIFACTS}/signing-page-completed.png`, fullPage: true });
    expect((await sb.client.getTransaction(created.id!)).status).toBe('completed');

    // Opening the address again now shows the "already completed" refusal.
    await page.goto(url);
    expect(await page.locator('main').getAttribute('data-refusal')).toBe('completed');
    await page.close();
  });

  it('tells a signer whose turn it is not to wait, with signing order', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2, signingOrder: true });
    const created = await sb.client.createTransaction(request);
    const second = request.participants[1]!;
    const url = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [second.id] } });
    const page = await browser.newPage();
    await page.goto(url);
    await expect.poll(() => page.locator('#status').textContent()).toContain('waiting for Signer1 Tester');
    expect(await page.locator('button.tag').first().isDisabled()).toBe(true);
    await page.close();
  });

  it('refuses with a clear page: invalid, expired, cancelled, and participant no longer in the transaction', async () => {
    const page = await browser.newPage();
    const refusalOf = async (url: string) => {
      const res = await page.goto(url);
      return {
        status: res?.status(),
        refusal: await page.locator('main').getAttribute('data-refusal'),
        text: await page.locator('h1').textContent(),
      };
    };
    expect(await refusalOf(`${sb.running.url}/sign/not-a-token`)).toMatchObject({ status: 401, refusal: 'link_invalid' });

    const short = await startTestSandbox({ iframeTtlSeconds: 1 });
    try {
      const r = await uploadedRequest(short.client);
      const c = await short.client.createTransaction(r);
      const url = await short.client.createIframeUrl({
        type: 'esign',
        data: { esignId: c.esignId!, participantIds: [r.participants[0]!.id] },
      });
      // The link says when it expires (its `exp`, in whole seconds); opening it before then would use it up.
      const { exp } = JSON.parse(Buffer.from(url.split('/sign/')[1]!.split('.')[1]!, 'base64url').toString('utf8')) as { exp: number };
      await eventually('the link’s expiry', () => Math.floor(Date.now() / 1000) >= exp, 5_000);
      expect(await refusalOf(url)).toMatchObject({ status: 401, refusal: 'link_expired', text: 'This signing link has expired' });
    } finally {
      await short.close();
    }

    const request = await uploadedRequest(sb.client, { signers: 2, status: 'draft' });
    const created = await sb.client.createTransaction(request);
    const url = await sb.client.createIframeUrl({
      type: 'esign',
      data: { esignId: created.esignId!, participantIds: [request.participants[1]!.id] },
    });
    expect(await refusalOf(url)).toMatchObject({ refusal: 'not_sent' });
    // The transaction is replaced without the second participant: their address no longer matches.
    const kept = request.participants[0]!;
    await sb.client.updateTransaction(created.id!, {
      ...request,
      referenceId: request.referenceId!,
      status: 'esign_pending',
      participants: [kept],
      documents: request.documents.map((d) => ({ ...d, tags: d.tags.filter((t) => t.signerId === kept.id) })),
    });
    expect(await refusalOf(url)).toMatchObject({ status: 409, refusal: 'participant_mismatch' });

    await sb.control.forceEnd(created.id!, 'cancelled');
    const keptUrl = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [kept.id] } });
    expect(await refusalOf(keptUrl)).toMatchObject({ refusal: 'cancelled', text: 'This transaction was cancelled' });
    await page.close();
  });

  it('is locked down: only the integrator origin frames it and hears it, a link opens the page once, only its session acts', async () => {
    const request = await uploadedRequest(sb.client, { signers: 1 });
    const created = await sb.client.createTransaction(request);
    const signer = request.participants[0]!;
    const link = () => sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [signer.id] } });

    // Another origin (a page on another port) cannot frame it: Chromium refuses to render it there.
    const other = await StubHttpServer.start();
    other.handler = host.handler;
    try {
      const url = await link();
      const page = await browser.newPage();
      const refused = page.waitForEvent('console', { predicate: (m) => m.text().includes('frame-ancestors'), timeout: 10_000 });
      await page.goto(`${other.url}/?src=${encodeURIComponent(url)}`);
      // The positive marker: Chromium reports that it refused to frame the page (its CSP's frame-ancestors).
      // The frame then holds Chromium's error page for good, so nothing can render or post a message later.
      await refused;
      expect(await page.frameLocator('#signer').locator('main#app').count()).toBe(0);
      expect(await events(page)).toEqual([]);
      await page.close();
      // Chromium did request it, so the link is used up now.
      expect((await fetch(url)).status).toBe(410);
    } finally {
      await other.close();
    }

    // The integrator's own page frames it and receives its messages.
    const url = await link();
    const res = await fetch(url);
    expect(res.headers.get('content-security-policy')).toContain(`frame-ancestors ${host.url}`);
    const html = await res.text();
    expect(html).toContain('main id="app"');
    // The link was used by that fetch: it opens nothing a second time, and says so.
    const again = await fetch(url);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('This signing link was already used');

    // The link itself cannot act; the page's session can (it is in the page, not in any address).
    const linkToken = new URL(url).pathname.split('/').pop()!;
    const session = /"session":"([^"]+)"/.exec(html)![1]!;
    const act = (token: string) =>
      fetch(`${sb.running.url}/sign/${token}/participants/${signer.id}/tags`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ docIndex: 0, tagIndex: 0, value: 'Signer1 Tester' }),
      });
    expect((await act(linkToken)).status).toBe(401);
    expect((await act(session)).status).toBe(204);
    // A session cannot open a page either.
    expect((await fetch(`${sb.running.url}/sign/${session}`)).status).toBe(401);

    // Links are short-lived: five minutes by default (docs/spec-gaps.md, row 38).
    const fresh = await startTestSandbox();
    try {
      const r = await uploadedRequest(fresh.client);
      const c = await fresh.client.createTransaction(r);
      const u = await fresh.client.createIframeUrl({
        type: 'esign',
        data: { esignId: c.esignId!, participantIds: [r.participants[0]!.id] },
      });
      const claims = JSON.parse(Buffer.from(new URL(u).pathname.split('/').pop()!.split('.')[1]!, 'base64url').toString()) as {
        iat: number;
        exp: number;
      };
      expect(claims.exp - claims.iat).toBe(300);
    } finally {
      await fresh.close();
    }
  });
});
