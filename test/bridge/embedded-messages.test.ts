// The embedded signing page in Chromium with third-party cookies blocked, framed by an integrator page on another
// site (localhost against the sandbox's 127.0.0.1): it works end to end without a cookie, and every way it can stop
// reaches the host as a message whose type says what to do (docs/integrator-events.md, "Messages from the embedded
// signing page").
import { readFile } from 'node:fs/promises';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_REASONS } from '../../packages/sandbox/src/page-messages.js';
import { frameKeepsCookies, launchChromiumProfile, signEveryTag } from '../support/browser.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';
import { StubHttpServer } from '../support/stub-http.js';

let sb: TestSandbox;
let stub: StubHttpServer;
let hostUrl: string;
let blocked: BrowserContext;

beforeAll(async () => {
  sb = await startTestSandbox({ iframeTtlSeconds: 900 });
  stub = await StubHttpServer.start();
  // Another site than the sandbox's: the signing page is a third party here, as on an integrator's real domain.
  hostUrl = stub.url.replace('127.0.0.1', 'localhost');
  stub.handler = (req, res) => {
    const src = new URL(req.url ?? '/', 'http://host').searchParams.get('src') ?? '';
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><html><body><iframe id="signer" src="${src.replace(/"/g, '&quot;')}" width="900" height="1000"></iframe>
<script>window.__events = []; addEventListener('message', (e) => window.__events.push(e.data));</script></body></html>`);
  };
  blocked = await launchChromiumProfile('blocked');
});
afterAll(async () => {
  await blocked?.close();
  await stub?.close();
  await sb?.close();
});

type Message = { type: string; reason?: string; action?: string; message?: string };
const messages = (page: Page) => page.evaluate<Message[]>('window.__events');

async function embed(context: BrowserContext, url: string, sandbox = sb): Promise<Page> {
  if (!sandbox.running.embedOrigins.includes(hostUrl)) sandbox.running.embedOrigins.push(hostUrl);
  const page = await context.newPage();
  await page.goto(`${hostUrl}/?src=${encodeURIComponent(url)}`);
  return page;
}

async function signable(sandbox = sb, signers = 1) {
  const request = await uploadedRequest(sandbox.client, { signers });
  const created = await sandbox.client.createTransaction(request);
  const link = (i = 0) =>
    sandbox.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [request.participants[i]!.id] } });
  return { request, created, link };
}

const signingFrame = (page: Page) => page.frames().find((f) => f.url().startsWith(sb.running.url) || f.url().includes('/sign/'))!;

describe('the embedded signing page', () => {
  it('is signed to the end with third-party cookies blocked, which the profile really does', async () => {
    const { created, link } = await signable();
    const page = await embed(blocked, await link());
    await expect.poll(() => messages(page)).toContainEqual(expect.objectContaining({ type: 'esign:loaded' }));
    // The page is a third party here and cannot keep a cookie...
    expect(await frameKeepsCookies(signingFrame(page))).toEqual({ cookieKept: false, storageAccess: false });
    await signEveryTag(page.frameLocator('#signer'));
    await expect.poll(() => messages(page)).toContainEqual(expect.objectContaining({ type: 'esign:completed' }));
    expect((await sb.client.getTransaction(created.id!)).status).toBe('completed');
    await page.close();

    // ...while the same probe, in a profile that allows third-party cookies, keeps one: the probe can tell.
    const allowed = await launchChromiumProfile('allowed');
    try {
      const other = await signable();
      const control = await embed(allowed, await other.link());
      await expect.poll(() => messages(control)).toContainEqual(expect.objectContaining({ type: 'esign:loaded' }));
      expect(await frameKeepsCookies(signingFrame(control))).toEqual({ cookieKept: true, storageAccess: true });
    } finally {
      await allowed.close();
    }
  });

  it('says esign:expired when its link was already used, has expired, or its session ran out, so the host asks for a fresh URL', async () => {
    const { link } = await signable();
    const url = await link();
    const first = await embed(blocked, url);
    await expect.poll(() => messages(first)).toContainEqual(expect.objectContaining({ type: 'esign:loaded' }));
    // The host shows the same URL again (a reload, a re-render): the link opens a page once.
    const again = await embed(blocked, url);
    await expect
      .poll(() => messages(again))
      .toEqual([expect.objectContaining({ type: 'esign:expired', reason: 'link_used', action: 'request_new_url' })]);
    await Promise.all([first.close(), again.close()]);

    // A short-lived link, and (on another sandbox) a short session.
    const short = await startTestSandbox({ iframeTtlSeconds: 1 });
    const brief = await startTestSandbox({ iframeTtlSeconds: 600, signingSessionSeconds: 8 });
    try {
      const expiring = await signable(short);
      const stale = await expiring.link();
      await new Promise((r) => setTimeout(r, 2_100));
      const late = await embed(blocked, stale, short);
      await expect
        .poll(() => messages(late))
        .toEqual([expect.objectContaining({ type: 'esign:expired', reason: 'link_expired', action: 'request_new_url' })]);
      await late.close();

      // Opened in time, then left open past its session: the next action says the session expired, and the page stops.
      const url = await (await signable(brief)).link();
      // The page's session token is in its own calls (the documents it fetches); its `exp` says when it lapses.
      const documentRequest = blocked.waitForEvent('request', { predicate: (r) => /\/sign\/[^/]+\/documents\//.test(r.url()) });
      const open = await embed(blocked, url, brief);
      const session = new URL((await documentRequest).url()).pathname.split('/')[2]!;
      const { exp } = JSON.parse(Buffer.from(session.split('.')[1]!, 'base64url').toString('utf8')) as { exp: number };
      await expect.poll(() => messages(open)).toContainEqual(expect.objectContaining({ type: 'esign:loaded' }));
      const frame = open.frameLocator('#signer');
      await frame.locator('body[data-pages-rendered="true"]').waitFor();
      await new Promise((r) => setTimeout(r, Math.max(0, (exp + 1) * 1_000 - Date.now())));
      await frame.locator('button.tag').first().click();
      await expect
        .poll(() => messages(open))
        .toContainEqual(expect.objectContaining({ type: 'esign:expired', reason: 'session_expired', action: 'request_new_url' }));
      await expect(frame.locator('body').getAttribute('data-stopped')).resolves.toBe('session_expired');
      expect(await frame.locator('#status').textContent()).toContain('This signing session has expired');
      expect(await frame.locator('button.tag, button.finish').count()).toBe(0);
      await open.close();
    } finally {
      await Promise.all([short.close(), brief.close()]);
    }
  }, 120_000);

  it('says esign:ended when the transaction ended meanwhile, and at once for a link to one that has', async () => {
    const { created, link } = await signable();
    const page = await embed(blocked, await link());
    const frame = page.frameLocator('#signer');
    await frame.locator('body[data-pages-rendered="true"]').waitFor();
    await sb.control.forceEnd(created.id!, 'cancelled');
    await frame.locator('button.tag').first().click();
    await expect
      .poll(() => messages(page))
      .toContainEqual(expect.objectContaining({ type: 'esign:ended', reason: 'cancelled', action: 'none' }));
    expect(await frame.locator('#status').textContent()).toContain('This transaction was cancelled');
    await page.close();

    const later = await embed(blocked, await link());
    await expect
      .poll(() => messages(later))
      .toEqual([expect.objectContaining({ type: 'esign:ended', reason: 'cancelled', action: 'none' })]);
    await later.close();
  });

  it('gives every other failure a reason and an action the host can act on', async () => {
    const invalid = await embed(blocked, `${sb.running.url}/sign/not-a-token`);
    await expect
      .poll(() => messages(invalid))
      .toEqual([expect.objectContaining({ type: 'esign:error', reason: 'link_invalid', action: 'request_new_url' })]);
    await invalid.close();

    // A URL for a participant the transaction no longer has (the transaction was replaced without them).
    const request = await uploadedRequest(sb.client, { signers: 2, status: 'draft' });
    const created = await sb.client.createTransaction(request);
    const gone = request.participants[1]!;
    const url = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [gone.id] } });
    const notYet = await embed(blocked, url);
    await expect
      .poll(() => messages(notYet))
      .toEqual([expect.objectContaining({ type: 'esign:error', reason: 'not_sent', action: 'retry_later' })]);
    await notYet.close();
    const kept = request.participants[0]!;
    await sb.client.updateTransaction(created.id!, {
      ...request,
      referenceId: request.referenceId!,
      status: 'esign_pending',
      participants: [kept],
      documents: request.documents.map((d) => ({ ...d, tags: d.tags.filter((t) => t.signerId === kept.id) })),
    });
    // The same URL: a refusal for a transaction not yet sent leaves the link unused.
    const mismatch = await embed(blocked, url);
    await expect
      .poll(() => messages(mismatch))
      .toEqual([expect.objectContaining({ type: 'esign:error', reason: 'participant_mismatch', action: 'check_request' })]);
    await mismatch.close();
  });

  it('has every message, reason and action listed in docs/integrator-events.md', async () => {
    const doc = await readFile(new URL('../../docs/integrator-events.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Messages from the embedded signing page'));
    expect(section.length).toBeLessThan(doc.length);
    for (const [reason, { type, action }] of Object.entries(PAGE_REASONS)) {
      expect(section).toMatch(new RegExp('`' + reason + '`.*`' + type + '`.*`' + action + '`'));
    }
    for (const type of [
      'esign:loaded',
      'esign:authenticated',
      'esign:tag-applied',
      'esign:participant-signed',
      'esign:completed',
      'esign:declined',
    ])
      expect(section).toContain(`\`${type}\``);
  });
});
