// The example integrator the dev stack serves (tools/dev/host-page.ts), driven
// in Chromium as a person would: start a transaction, sign it in the embedded
// page as each signer, and watch the page's messages and the signed callback
// events arrive.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cancelEsignTransaction } from '../../src/client/transactions.js';
import { startHostPage, type RunningHostPage } from '../../tools/dev/host-page.js';
import { freePort } from '../../tools/support/net.js';
import { launchChromium, signEveryTag } from '../support/browser.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let env: EsignTestEnv;
let host: RunningHostPage;
let browser: Browser;

beforeAll(async () => {
  const port = await freePort();
  const hostUrl = `http://127.0.0.1:${port}`;
  env = await startEsignTestEnv({ bridge: true, deps: { callbackSecrets: [secret], allowedUrls: [hostUrl] } });
  env.sandbox.running.embedOrigins.push(hostUrl);
  host = await startHostPage(
    {
      client: env.temporal.client,
      taskQueue: env.taskQueue,
      callbackSecret: secret,
      signingOrigin: new URL(env.sandbox.running.url).origin,
      samplePdfPath: env.pdfs[0]!,
    },
    { host: '127.0.0.1', port },
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await env?.close();
});

const listed = (page: Page, list: string) => page.locator(`#${list} li`).allTextContents();

async function signAs(page: Page, name: string): Promise<void> {
  await page.locator(`#signers button`, { hasText: `Sign as ${name}` }).click();
  const frame = page.frameLocator('#signer');
  // The iframe navigates to this signer's page: wait for it, not for the previous signer's.
  await frame.locator('button.finish', { hasText: `Finish signing as ${name}` }).waitFor();
  await signEveryTag(frame);
}

it('embeds the signing page, shows its messages and the verified callback events of a whole transaction', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(host.url);
  await page.locator('#start').click();
  await expect.poll(() => page.locator('#signers button').count(), { timeout: 30_000 }).toBe(2);

  await signAs(page, 'Ada Lovelace');
  await expect
    .poll(() => listed(page, 'page-events'))
    .toEqual(expect.arrayContaining(['esign:loaded', 'esign:tag-applied', 'esign:participant-signed']));
  await expect.poll(() => listed(page, 'callback-events'), { timeout: 30_000 }).toEqual(['participant.signed']);

  await signAs(page, 'Alan Turing');
  await expect
    .poll(() => listed(page, 'callback-events'), { timeout: 30_000 })
    .toEqual(['participant.signed', 'participant.signed', 'transaction.completed']);
  expect(host.events.map((e) => e.type)).toEqual(['participant.signed', 'participant.signed', 'transaction.completed']);

  const dir = process.env.SCREENSHOT_DIR ?? 'test-artifacts';
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: `${dir}/integrator-page.png` });
  await page.close();
});

it('asks its backend for a fresh signing URL when the page says its link expired, and says when the transaction was cancelled', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(host.url);
  await page.locator('#start').click();
  await expect.poll(() => page.locator('#signers button').count(), { timeout: 30_000 }).toBe(2);
  await page.locator('#signers button', { hasText: 'Sign as Ada Lovelace' }).click();
  const frame = page.frameLocator('#signer');
  await frame.locator('button.finish', { hasText: 'Finish signing as Ada Lovelace' }).waitFor();

  // The iframe loads its URL again (a reload, a re-render): the single-use link is spent, the page says so, and
  // the host renews it without the signer doing anything.
  const first = await page.locator('#signer').getAttribute('src');
  await page.evaluate('document.getElementById("signer").src = document.getElementById("signer").src');
  await expect.poll(() => listed(page, 'page-events'), { timeout: 30_000 }).toContain('esign:expired (link_used)');
  await expect.poll(() => listed(page, 'page-events').then((l) => l.filter((t) => t === 'esign:loaded').length)).toBe(2);
  expect(await page.locator('#signer').getAttribute('src')).not.toBe(first);
  expect(await page.locator('#notice').textContent()).toContain('a fresh one was loaded');

  // Cancelled while the renewed page is open: the signer's next action is refused, and the host says why.
  await frame.locator('body[data-pages-rendered="true"]').waitFor();
  const referenceId = (await page.locator('#ref').textContent())!;
  await cancelEsignTransaction(env.temporal.client, referenceId, 'changed our mind');
  await expect.poll(() => listed(page, 'callback-events'), { timeout: 30_000 }).toContain('transaction.cancelled');
  await frame.locator('button.tag:not(.applied)').first().click();
  // The workflow withdraws a cancelled transaction by returning it to draft: the page can only say it is not sent,
  // and the host, which has the cancelled event, says the rest.
  await expect.poll(() => listed(page, 'page-events')).toContain('esign:error (not_sent)');
  expect(await page.locator('#notice').textContent()).toBe('This transaction can no longer be signed (cancelled).');
  await page.close();
});
