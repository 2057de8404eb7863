// Every way a transaction ends, end to end: the real provider sandbox over
// HTTP sending signed webhooks to the real bridge, the real Temporal dev
// server, a worker, and Chromium for the signing page.
import { readdir } from 'node:fs/promises';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverNotification } from '../../src/bridge/deliver.js';
import { sandboxOwners } from '../support/bridge.js';
import type { EsignEndWebhook } from '../../src/esign/schemas.js';
import { SandboxControlError } from '../../src/client/sandbox-control.js';
import { cancelUpdate, issueSigningUrlUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { lateCompletionIdFor } from '../../src/definitions/late-completion.js';
import type { esignLateCompletion } from '../../workflows/late-completion.js';
import { launchChromium } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { inboxNotifications } from '../support/inbox-history.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { StubHttpServer } from '../support/stub-http.js';

let env: EsignTestEnv;
let browser: Browser;
let host: StubHttpServer;

beforeAll(async () => {
  env = await startEsignTestEnv({ bridge: true });
  // The integrator's page: embeds the signing URL as the spec recommends.
  host = await StubHttpServer.start();
  // Only the integrator's origin may frame the signing page and receive its messages.
  env.sandbox.running.embedOrigins.push(host.url);
  host.handler = (req, res) => {
    const src = new URL(req.url ?? '/', 'http://host').searchParams.get('src') ?? '';
    res.setHeader('content-type', 'text/html');
    res.end(
      `<!doctype html><iframe id="signer" src="${src.replace(/"/g, '&quot;')}" width="900" height="1000" allow="camera *; microphone *; fullscreen *"></iframe>`,
    );
  };
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await env?.close();
});

type Handle = Awaited<ReturnType<EsignTestEnv['start']>>['handle'];

async function signalNames(handle: Handle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) =>
    e.workflowExecutionSignaledEventAttributes ? [e.workflowExecutionSignaledEventAttributes.signalName!] : [],
  );
}

async function esignStatusAttribute(handle: Handle): Promise<unknown> {
  const described = await handle.describe();
  return described.typedSearchAttributes.getAll().find((p) => p.key.name === 'EsignStatus')?.value;
}

async function archivedFolders(transactionId: string): Promise<string[]> {
  return (await readdir(env.archiveDir, { recursive: true })).filter((f) => f.endsWith(transactionId));
}

// Side by side: each has a transaction of its own and waits on its deadline. The suites after this one turn the
// sandbox's webhooks off and on, so they run one test at a time.
describe.concurrent('cancel and deadline withdraw the transaction at the provider first', () => {
  it('cancel: the provider record is a draft again, the signing page refuses, and signing fails', async ({ expect }) => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const { url } = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [status.participants[0]!.id] }] });

    const result = await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'deal called off' }] });
    expect(result).toMatchObject({ status: 'cancelled', reason: 'deal called off', endedBy: 'request' });
    expect((await env.sandbox.client.getTransaction(status.transactionId!)).status).toBe('draft');
    const page = await fetch(url);
    expect(page.status).toBe(409);
    expect(await page.text()).toContain('not been sent for signing');
    const signed = await env.sandbox.control.signAs(status.transactionId!, status.participants[0]!.id).catch((e: unknown) => e);
    expect(signed).toBeInstanceOf(SandboxControlError);
    expect((signed as SandboxControlError).status).toBe(409);
    expect(await esignStatusAttribute(handle)).toEqual('cancelled');
  });

  it('cancel after a participant signed: a typed refusal naming how many signed, and the workflow follows it to completion', async ({
    expect,
  }) => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await env.sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);

    const refused = await handle.executeUpdate(cancelUpdate, { args: [{}] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    const failure = (refused as WorkflowUpdateFailedError).cause as Error & { type?: string };
    expect(failure.type).toBe('WithdrawRefused');
    expect(failure.message).toMatch(/1 of 2 participant\(s\) have signed/);
    expect((await handle.query(statusQuery)).phase).toBe('awaiting_signatures');
    expect((await handle.query(statusQuery)).participants.map((p) => p.status)).toEqual(['signed', 'pending']);

    await env.sandbox.control.signAs(status.transactionId!, status.participants[1]!.id);
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(await archivedFolders(status.transactionId!)).toHaveLength(1);
  });

  it('deadline: withdraws, then ends expired; the provider can no longer complete it', async ({ expect }) => {
    const { handle } = await env.start(env.input({ signingDeadline: '3 seconds', reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'expired', endedBy: 'deadline' });
    expect((await env.sandbox.client.getTransaction(status.transactionId!)).status).toBe('draft');
  });

  it('deadline after a participant signed: overdue, then archived when the last one signs', async ({ expect }) => {
    const { handle } = await env.start(env.input({ signingDeadline: '4 seconds', reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await env.sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);
    await waitForPhase(handle, 'overdue');
    expect(await esignStatusAttribute(handle)).toEqual('overdue');
    await env.sandbox.control.signAs(status.transactionId!, status.participants[1]!.id);
    expect((await handle.result()).status).toBe('completed');
  });
});

describe('a signer declines', () => {
  it('from the real signing page in Chromium: webhook, bridge and workflow end it declined, with who and why', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' })); // only the webhook can end it
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const alan = status.participants[1]!;
    const { url } = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [alan.id] }] });

    const page = await browser.newPage();
    await page.goto(`${host.url}/?src=${encodeURIComponent(url)}`);
    const frame = page.frameLocator('#signer');
    await frame.locator(`button.decline[data-decline-for="${alan.id}"]`).click();
    await frame.locator('form.decline textarea').fill('The salary is not what we agreed.');
    await frame.locator('form.decline button[type="submit"]').click();
    await frame.locator('body[data-declined="true"]').waitFor();
    await page.close();

    const result = await handle.result();
    expect(result).toMatchObject({
      status: 'declined',
      reason: 'The salary is not what we agreed.',
      declinedBy: { participantId: alan.id, name: 'Alan Turing' },
      endedBy: 'signer',
    });
    expect(await signalNames(handle)).toContain('esignEvent');
    expect((await handle.query(statusQuery)).lastReconciledAt).toBeNull();
    expect(await esignStatusAttribute(handle)).toEqual('declined');
    // The page refuses afterwards.
    expect((await fetch(url)).status).toBe(409);
  });

  it('with the webhook lost: reconciliation finds the decline', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await env.sandbox.control.setFaults({ dropWebhookRate: 1 });
    try {
      await env.sandbox.control.declineAs(status.transactionId!, status.participants[0]!.id, 'not today');
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'declined', reason: 'not today', declinedBy: { name: 'Ada Lovelace' } });
      expect(await signalNames(handle)).not.toContain('esignEvent');
      expect((await handle.query(statusQuery)).lastReconciledAt).not.toBeNull();
    } finally {
      await env.sandbox.control.setFaults({});
    }
  });
});

describe('the provider ends the transaction itself', () => {
  it.each([
    ['cancelled', 'webhook'],
    ['expired', 'webhook'],
    ['deleted', 'webhook'],
    ['cancelled', 'reconciliation'],
    ['deleted', 'reconciliation'],
  ] as const)('%s, found by %s', async (end, via) => {
    const { handle } = await env.start(env.input({ reconcileInterval: via === 'webhook' ? '1 day' : '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    if (via === 'reconciliation') await env.sandbox.control.setFaults({ dropWebhookRate: 1 });
    try {
      await env.sandbox.control.forceEnd(status.transactionId!, end);
      const result = await handle.result();
      expect(result).toMatchObject({ status: end, endedBy: 'provider' });
      expect(await esignStatusAttribute(handle)).toEqual(end);
      if (via === 'webhook') expect(await signalNames(handle)).toContain('esignEvent');
      else expect((await handle.query(statusQuery)).lastReconciledAt).not.toBeNull();
    } finally {
      await env.sandbox.control.setFaults({});
    }
  });
});

describe('nothing signed is ever lost', () => {
  it('a completion after the workflow ended is archived exactly once by a late-completion workflow', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'withdrawn' }] });
    expect(await handle.result()).toMatchObject({ status: 'cancelled' });

    // Someone sends the withdrawn transaction again through the API, and everyone signs it.
    const record = await env.sandbox.client.getTransaction(status.transactionId!);
    await env.sandbox.client.updateTransaction(status.transactionId!, {
      status: 'esign_pending',
      referenceId: record.referenceId!,
      documents: record.documents.map((d) => ({
        title: d.title!,
        StoragePath: d.StoragePath,
        tags: d.tags ?? [],
        ...(d.id ? { id: d.id } : {}),
      })),
      participants: record.participants.map(({ status: _s, signedAt: _a, declinedAt: _d, declineReason: _r, ...p }) => p) as never,
    });
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);

    const late = env.temporal.client.workflow.getHandle<typeof esignLateCompletion>(lateCompletionIdFor(status.transactionId!));
    await expect.poll(async () => (await late.describe().catch(() => undefined))?.status.name, { timeout: 30_000 }).toBe('COMPLETED');
    const lateResult = await late.result();
    expect(lateResult).toMatchObject({ status: 'archived', report: { status: 'completed', referenceId: status.referenceId } });
    expect(lateResult.report!.archive!.sha256).toBe((await env.sandbox.control.inspect(status.transactionId!))!.zip!.sha256);
    expect((await late.describe()).typedSearchAttributes.getAll().find((p) => p.key.name === 'EsignStatus')?.value).toBe('completed_late');

    // A redelivered completion starts nothing more: one late workflow, one archive.
    const completed = (await env.sandbox.deliveries(status.transactionId!))
      .map((d) => JSON.parse(d.payload) as EsignEndWebhook)
      .filter((n) => n.event === 'esign-completed');
    expect(completed).toHaveLength(1);
    const earlier = await inboxNotifications(env.temporal.client, status.transactionId!);
    await deliverNotification(env.temporal.client, completed[0]!, { taskQueue: env.taskQueue, owners: sandboxOwners(env.sandbox) });
    // The positive marker: the inbox has run a task with the redelivery. A late completion would be started from
    // that task (an activity in its history); none was, so nothing can follow from it and no further wait is needed.
    const redelivery = await eventually('the inbox to handle the redelivery', async () => {
      const now = await inboxNotifications(env.temporal.client, status.transactionId!);
      return now.received > earlier.received && now.handled && now;
    });
    expect(redelivery.effects).toEqual([]);
    const runs = [];
    for await (const wf of env.temporal.client.workflow.list({ query: `WorkflowId = '${lateCompletionIdFor(status.transactionId!)}'` }))
      runs.push(wf);
    expect(runs).toHaveLength(1);
    expect(await archivedFolders(status.transactionId!)).toHaveLength(1);
  });
});
