// Signer authentication on the sandbox's signing page, in Chromium: the
// password, the one-time code read from the sandbox's outbox, lock-out after
// wrong answers, the simulated KBA and ID steps, every attempt in the audit
// trail; and the invitations the outbox receives.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateTransactionRequest } from '../../src/esign/schemas.js';
import { launchChromium, signEveryTag } from '../support/browser.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';

let sb: TestSandbox;
let browser: Browser;

beforeAll(async () => {
  sb = await startTestSandbox({ iframeTtlSeconds: 900 });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await sb?.close();
});

async function created(mutate: (r: CreateTransactionRequest) => void) {
  const request = await uploadedRequest(sb.client, { signers: 1 });
  mutate(request);
  const record = await sb.client.createTransaction(request);
  const signer = request.participants[0]!;
  const url = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: record.esignId!, participantIds: [signer.id] } });
  return { request, record, signer, url };
}

const answer = async (page: Page, value: string) => {
  await page.locator('form.auth input[name=answer]').fill(value);
  await page.locator('form.auth button[type=submit]').click();
};

describe('signer authentication', () => {
  it('asks a personal-password signer for the password before showing anything, and records each attempt', async () => {
    const { record, url } = await created((r) => {
      r.participants[0]!.authenticationType = 'personal-password';
      r.participants[0]!.personalPasswordQuestion = 'The word on the sticky note?';
      r.participants[0]!.personalPassword = 'correct horse';
    });
    const page = await browser.newPage();
    await page.goto(url);
    const form = page.locator('form.auth[data-step="personal-password"]');
    await form.waitFor();
    expect(await form.textContent()).toContain('The word on the sticky note?');
    expect(await page.locator('.page').count()).toBe(0); // no documents before the password

    await answer(page, 'wrong horse');
    await expect.poll(() => page.locator('#status').textContent()).toMatch(/personal-password not accepted; 4 attempt\(s\) left/);
    await answer(page, 'correct horse');
    await signEveryTag(page);
    expect((await sb.client.getTransaction(record.id!)).status).toBe('completed');

    const trail = await sb.control.auditTrail(record.id!);
    const auth = trail.filter((e) => e.type.startsWith('authentication_'));
    expect(auth.map((e) => [e.type, e.detail?.step])).toEqual([
      ['authentication_failed', 'personal-password'],
      ['authentication_passed', 'personal-password'],
    ]);
    expect(auth[0]!.ip).toBe('127.0.0.1');
    expect(auth[0]!.userAgent).toMatch(/Chrome/);
    expect(JSON.stringify(trail)).not.toContain('horse'); // neither answer is recorded
    await page.close();
  });

  it('sends a two-factor signer a code to the outbox, which the page asks for', async () => {
    const { record, signer, url } = await created((r) => {
      r.participants[0]!.authenticationType = 'two-factor-authentication';
      r.participants[0]!.twoFactorContact = 'sms';
      r.participants[0]!.phone = '+1 555 0100 123';
    });
    const page = await browser.newPage();
    await page.goto(url);
    await page.locator('form.auth[data-step="two-factor-authentication"]').waitFor();
    expect(await page.locator('#status').textContent()).toContain('***0123');
    const [sms] = await sb.control.outbox({ transactionId: record.id! });
    expect(sms).toMatchObject({ channel: 'sms', to: '+1 555 0100 123', kind: 'one-time-code', participantId: signer.id });
    const code = /\b(\d{6})\b/.exec(sms!.body)![1]!;

    // The outbox page shows the same message to a developer.
    const outbox = await browser.newPage();
    await outbox.goto(`${sb.running.url}/_sandbox/outbox.html`);
    await expect.poll(() => outbox.locator('article[data-kind="one-time-code"]').first().textContent()).toContain(code);
    await outbox.close();

    await answer(page, code);
    await signEveryTag(page);
    const trail = await sb.control.auditTrail(record.id!);
    expect(trail.map((e) => e.type)).toEqual(
      expect.arrayContaining(['one_time_code_sent', 'authentication_passed', 'signed', 'completed']),
    );
    expect(JSON.stringify(trail)).not.toContain(code);
    await page.close();
  });

  it('locks a signer out after five wrong codes, in the page and over HTTP, with every attempt in the audit trail', async () => {
    const { record, signer, url } = await created((r) => {
      r.participants[0]!.authenticationType = 'two-factor-authentication';
      r.participants[0]!.twoFactorContact = 'email';
    });
    const page = await browser.newPage();
    await page.goto(url);
    await page.locator('form.auth').waitFor();
    const [email] = await sb.control.outbox({ to: signer.email, transactionId: record.id! });
    const code = /\b(\d{6})\b/.exec(email!.body)![1]!;
    const wrong = code === '000000' ? '111111' : '000000';
    // The page acts with its own session token, in the path of its calls.
    const firstCall = page.waitForRequest((r) => r.url().endsWith('/authenticate'));
    for (let i = 0; i < 5; i++) {
      await answer(page, wrong);
      if (i < 4) await expect.poll(() => page.locator('#status').textContent()).toContain(`${4 - i} attempt(s) left`);
    }
    await page.locator('form.auth[data-locked="true"]').waitFor();
    expect(await page.locator('#status').textContent()).toContain('Too many failed attempts');

    // Even the right code is refused while locked out.
    const token = /\/sign\/([^/]+)\//.exec((await firstCall).url())![1]!;
    const res = await fetch(`${sb.running.url}/sign/${token}/participants/${signer.id}/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ step: 'two-factor-authentication', answer: code }),
    });
    expect(res.status).toBe(423);
    const docs = await fetch(`${sb.running.url}/sign/${token}/documents/0`);
    expect(docs.status).toBe(403);

    const trail = await sb.control.auditTrail(record.id!);
    expect(trail.filter((e) => e.type === 'authentication_failed')).toHaveLength(5);
    expect(trail.filter((e) => e.type === 'authentication_locked')).toHaveLength(1);
    expect((await sb.client.getTransaction(record.id!)).status).toBe('esign_pending');
    await page.close();
  });

  it('runs the simulated knowledge-based and ID checks in order', async () => {
    const { record, url } = await created((r) => {
      Object.assign(r.participants[0]!, { kbaRequired: true, credAnalysisRequired: true, zip: '10115' });
    });
    const page = await browser.newPage();
    await page.goto(url);
    await page.locator('form.auth[data-step="kba"]').waitFor();
    await answer(page, '10115');
    await page.locator('form.auth[data-step="credential-analysis"]').waitFor();
    await answer(page, 'Somebody Else');
    await expect.poll(() => page.locator('#status').textContent()).toContain('not accepted');
    await answer(page, 'signer1  tester');
    await signEveryTag(page);
    const steps = (await sb.control.auditTrail(record.id!)).filter((e) => e.type.startsWith('authentication_'));
    expect(steps.map((e) => [e.type, e.detail?.step])).toEqual([
      ['authentication_passed', 'kba'],
      ['authentication_failed', 'credential-analysis'],
      ['authentication_passed', 'credential-analysis'],
    ]);
    await page.close();
  });

  it('refuses to create a password signer without a password, or an sms signer without a phone (422 naming the field)', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2 });
    request.participants[0]!.authenticationType = 'personal-password';
    request.participants[1]!.authenticationType = 'two-factor-authentication';
    request.participants[1]!.twoFactorContact = 'sms';
    const res = await fetch(`${sb.running.url}/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.token}` },
      body: JSON.stringify(request),
    });
    expect(res.status).toBe(422);
    const problem = (await res.json()) as { errors: { pointer: string }[] };
    expect(problem.errors.map((e) => e.pointer)).toEqual(['/participants/0/personalPassword', '/participants/1/phone']);
    // Our client holds the same contract, so it refuses before sending.
    await expect(sb.client.createTransaction(request)).rejects.toThrow(/personalPassword[\s\S]*phone/);
  });
});

describe('invitations in the outbox', () => {
  it('invites each signer with the subject and message given, only when notifyParticipants.email is true', async () => {
    const { record, request } = await created((r) => {
      r.notifyParticipants = { email: true };
      r.emailSubject = 'Please sign the lease';
      r.personalizedMessage = 'Here is the lease we talked about.';
      r.participants[0]!.inviteEmailSubject = 'Your lease, Signer1';
    });
    const [invitation] = await sb.control.outbox({ transactionId: record.id! });
    expect(invitation).toMatchObject({
      kind: 'invitation',
      channel: 'email',
      to: request.participants[0]!.email,
      subject: 'Your lease, Signer1',
    });
    expect(invitation!.body).toContain('Here is the lease we talked about.');
    expect((await sb.control.auditTrail(record.id!)).map((e) => e.type)).toEqual(['created', 'sent', 'invitation_sent']);

    const quiet = await created((r) => (r.notifyParticipants = { email: false }));
    expect(await sb.control.outbox({ transactionId: quiet.record.id! })).toEqual([]);
  });

  it('with a signing order, invites the next signer only once the previous has signed', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2, signingOrder: true });
    request.notifyParticipants = { email: true };
    request.emailSubject = 'Sign in turn';
    const record = await sb.client.createTransaction(request);
    const invited = async () => (await sb.control.outbox({ transactionId: record.id! })).map((m) => [m.to, m.subject]);
    expect(await invited()).toEqual([['signer1@example.com', 'Sign in turn']]);
    await sb.control.signAs(record.id!, request.participants[0]!.id);
    expect(await invited()).toEqual([
      ['signer2@example.com', 'Sign in turn'],
      ['signer1@example.com', 'Sign in turn'],
    ]);
  });
});
