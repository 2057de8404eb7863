import { mkdir } from 'node:fs/promises';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './support/browser.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from './support/sandbox.js';
import { StubHttpServer } from './support/stub-http.js';

const ARTIFACTS = 'test-artifacts';
let sb: TestSandbox;
let host: StubHttpServer;
let browser: Browser;

beforeAll(async () => {
  sb = await startTestSandbox({ iframeTtlSeconds: 900 });
  // The integrator's page: embeds the signing URL in an iframe as the spec recommends and records its messages.
  host = await StubHttpServer.start();
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
    await expect.poll(() => events(page)).toContainEqual(expect.objectContaining({ type: 'esign:completed', transactionId: created.id }));
    expect((await events(page)).map((e) => e.type)).toEqual([
      'esign:loaded',
      'esign:tag-applied',
      'esign:tag-applied',
      'esign:participant-signed',
      'esign:completed',
    ]);
    await expect.poll(() => frame.locator('#status').textContent()).toContain('Thank you');
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
      await new Promise((resolve) => setTimeout(resolve, 2100));
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
});
