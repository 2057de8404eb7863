import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidTransactionInput } from '../../src/client/transactions.js';
import {
  cancelUpdate,
  esignCompletedSignal,
  issueSigningUrlUpdate,
  replaceTransactionUpdate,
  statusQuery,
  WORKFLOW_TYPE,
  type EsignTransactionStatus,
} from '../../src/definitions/transaction.js';
import type { esignTransaction } from '../../workflows/esign-transaction.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { readZipEntries } from '../support/zip.js';

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv();
});
afterAll(async () => {
  await env?.close();
});

async function signEveryone(status: EsignTransactionStatus): Promise<void> {
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return `${(err as Error).message} ${failureOf(err)}`;
}

function failureOf(err: unknown): string {
  const cause = (err as { cause?: { message?: string; cause?: { message?: string } } }).cause;
  return `${cause?.message ?? ''} ${cause?.cause?.message ?? ''}`;
}

describe('esignTransaction workflow', () => {
  it('uploads, creates, waits for the webhook signal, and archives a verified ZIP', async () => {
    const { handle } = await env.start(env.input());
    const status = await waitForPhase(handle, 'awaiting_signatures');
    expect(status.transactionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(status.participants.map((p) => p.name)).toEqual(['Ada Lovelace', 'Alan Turing']);
    expect(JSON.stringify(status)).not.toContain('@example.com'); // no e-mails in queries either

    await signEveryone(status);
    await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
    const result = await handle.result();

    expect(result.status).toBe('completed');
    const provider = (await env.sandbox.control.inspect(status.transactionId!))!;
    expect(result.archive?.sha256).toBe(provider.zip?.sha256);
    expect(result.archive?.bytes).toBe(provider.zip?.bytes);
    const zipPath = fileURLToPath(result.archive!.uri);
    const bytes = await readFile(zipPath);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(result.archive!.sha256);
    expect([...(await readZipEntries(zipPath)).keys()].sort()).toEqual([
      'Annex A.pdf',
      'Employment contract.pdf',
      'audit-trail.json',
      'certificate-of-completion.pdf',
    ]);
    const manifest = JSON.parse(await readFile(zipPath.replace(/completed\.zip$/, 'manifest.json'), 'utf8')) as {
      referenceId: string;
      files: unknown[];
      evidence: NonNullable<typeof result.archive>['evidence'];
    };
    expect(manifest.referenceId).toBe(status.referenceId);
    expect(manifest.files).toHaveLength(4);
    // The evidence: each document sealed by the sandbox, trusted, and the very PDF we uploaded.
    const uploaded = await Promise.all(
      env.pdfs.map(async (p) =>
        createHash('sha256')
          .update(await readFile(p))
          .digest('hex'),
      ),
    );
    expect(manifest.evidence).toEqual(result.archive!.evidence);
    expect(manifest.evidence!.policy).toMatchObject({ signatures: 'require', requireCompletionCertificate: true });
    expect(manifest.evidence!.documents.map((d) => [d.entry, d.originalSha256, d.providerOriginalSha256])).toEqual([
      ['Employment contract.pdf', uploaded[0], uploaded[0]],
      ['Annex A.pdf', uploaded[1], uploaded[1]],
    ]);
    for (const d of [...manifest.evidence!.documents, manifest.evidence!.certificateOfCompletion!]) {
      expect(d.signature).toMatchObject({ result: 'valid', trusted: true, subFilter: 'ETSI.CAdES.detached', problems: [] });
      expect(d.signature.signer!.subject).toBe('CN=esign sandbox document seal, O=esign sandbox');
      expect(d.signature.signer!.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(manifest.evidence!.auditTrail!.events).toBeGreaterThan(5);

    // Operators can find it by search attribute.
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get({ name: 'EsignStatus', type: 'KEYWORD' } as never)).toBe('completed');
    // Nothing a person typed rides along in clear or in a memo that an erasure would leave undecodable in listings.
    expect(description.memo ?? {}).toEqual({});
  });

  it('recovers a lost webhook by reconciliation', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await signEveryone(status); // no signal: the webhook is "lost"
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect((await handle.query(statusQuery)).lastReconciledAt).not.toBeNull();
  });

  it('ignores duplicate and mismatched notifications', async () => {
    const { handle } = await env.start(env.input());
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const other = completedWebhook({ transactionId: crypto.randomUUID(), esignId: crypto.randomUUID() });
    await handle.signal(esignCompletedSignal, other);
    await handle.signal(esignCompletedSignal, other);
    await handle.signal(esignCompletedSignal, { event: 'esign-completed', entity: 'esign', data: { notificationId: 'x' } } as never);
    await expect.poll(async () => (await handle.query(statusQuery)).notificationsRejected).toBe(2);
    expect((await handle.query(statusQuery)).phase).toBe('awaiting_signatures');

    await signEveryone(status);
    const real = completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! });
    await handle.signal(esignCompletedSignal, real);
    await handle.signal(esignCompletedSignal, real);
    expect((await handle.result()).status).toBe('completed');
    expect((await handle.query(statusQuery)).notificationsAccepted).toBe(1);
  });

  it('starting the same referenceId twice returns the running workflow', async () => {
    const input = env.input();
    const first = await env.start(input);
    const second = await env.start(input);
    expect((await second.handle.describe()).runId).toBe((await first.handle.describe()).runId);
    await waitForPhase(first.handle, 'awaiting_signatures');
    await first.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'test done' }] });
    const provider = await env.sandbox.client.listTransactions({ limit: 500 });
    expect(provider.data.filter((t) => t.referenceId === input.referenceId)).toHaveLength(1);
  });

  it('is cancelled by the cancel update, which returns the result', async () => {
    const { handle } = await env.start(env.input());
    await waitForPhase(handle, 'awaiting_signatures');
    const result = await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'customer withdrew' }] });
    expect(result).toMatchObject({ status: 'cancelled', reason: 'customer withdrew' });
    expect(await handle.result()).toMatchObject({ status: 'cancelled' });
    // A finished workflow takes no more updates.
    await expect(handle.executeUpdate(cancelUpdate, { args: [{}] })).rejects.toThrow();
  });

  it('creates a draft and sends it later with replaceTransaction', async () => {
    const { handle } = await env.start(env.input({ status: 'draft', emailSubject: 'Draft subject', reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'draft');
    expect((await env.sandbox.client.getTransaction(status.transactionId!)).status).toBe('draft');
    const early = await rejection(
      handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [status.participants[0]!.id] }] }),
    );
    expect(early).toMatch(/draft: send it first/);

    const sent = await handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending', emailSubject: 'Please sign' }] });
    expect(sent.status).toBe('esign_pending');
    expect(await env.sandbox.client.getTransaction(status.transactionId!)).toMatchObject({
      status: 'esign_pending',
      emailSubject: 'Please sign',
    });
    await waitForPhase(handle, 'awaiting_signatures');
    await signEveryone(status); // no webhook: the sent draft must be polled, not left waiting as a draft
    expect((await handle.result()).status).toBe('completed');
    await expect(handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'draft' }] })).rejects.toThrow();
  });

  it('follows the signing order: the second signer cannot sign before the first', async () => {
    const { handle } = await env.start(env.input({ signingOrder: true, reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const [first, second] = status.participants;
    await expect(env.sandbox.control.signAs(status.transactionId!, second!.id)).rejects.toThrow(/Ada Lovelace's turn/);
    await env.sandbox.control.signAs(status.transactionId!, first!.id);
    expect((await handle.query(statusQuery)).phase).toBe('awaiting_signatures');
    await env.sandbox.control.signAs(status.transactionId!, second!.id);
    expect((await handle.result()).status).toBe('completed');
  });

  it('issues a fresh signing URL per request, only for known participants', async () => {
    const { handle } = await env.start(env.input({ iframeStyle: { primaryColor: '#123456' } }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const ada = status.participants[0]!.id;
    const a = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [ada] }] });
    const b = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [ada] }] });
    expect(a.url).toMatch(new RegExp(`^${env.sandbox.running.url}/sign/`));
    const page = await fetch(a.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('#123456');
    expect(b.url).not.toBe(a.url);
    expect(await rejection(handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: ['nobody'] }] }))).toMatch(
      /unknown participant\(s\): nobody/,
    );
    await handle.executeUpdate(cancelUpdate, { args: [{}] });
  });

  it('returns the first signing URL in the same call as the start (update-with-start)', async () => {
    const input = env.input({
      participants: [
        {
          id: crypto.randomUUID(),
          email: 'x@example.com',
          firstName: 'X',
          lastName: 'Y',
          authenticationType: 'none',
          twoFactorContact: 'email',
        },
      ],
    });
    input.documents = [
      {
        title: 'One',
        source: { path: env.pdfs[0]! },
        tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
      },
    ];
    const started = await env.start(input, { signingUrlFor: { participantIds: [input.participants[0]!.id!] } });
    expect(started.signingUrl).toMatch(/\/sign\//);
    await started.handle.executeUpdate(cancelUpdate, { args: [{}] });
  });

  it('rejects invalid input before any provider call, naming the field', async () => {
    const before = (await env.sandbox.client.listTransactions()).total;
    const bad = env.input({ emailSubject: 'x'.repeat(300) });
    await expect(env.start(bad)).rejects.toThrow(InvalidTransactionInput);
    await expect(env.start(bad)).rejects.toThrow(/emailSubject/);

    // Started without the helper (another SDK, the CLI): the workflow itself refuses, non-retryably.
    const handle = await env.temporal.client.workflow.start<typeof esignTransaction>(WORKFLOW_TYPE, {
      taskQueue: env.taskQueue,
      workflowId: `esign-bad-${crypto.randomUUID()}`,
      args: [{ ...env.input(), participants: [] }],
    });
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(failureOf(err)).toMatch(/participants: at least one participant/);
    expect((await env.sandbox.client.listTransactions()).total).toBe(before);
  });

  it('refuses a document that is not a PDF, with no provider transaction', async () => {
    const before = (await env.sandbox.client.listTransactions()).total;
    const input = env.input();
    input.documents[0]!.source = { path: fileURLToPath(import.meta.url) };
    const { handle } = await env.start(input);
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(failureOf(err)).toMatch(/outside the allowed document roots|not a PDF/);
    expect((await env.sandbox.client.listTransactions()).total).toBe(before);
  });
});

describe('esignTransaction under provider faults', () => {
  it('completes despite 5xx, 429 and connection resets on every call, and a truncated ZIP', async () => {
    // Faults from the first call on: upload, create, polls, confirmation and download all meet them.
    env.sandbox.running.faults.configure({
      error5xxRate: 0.3,
      rateLimitRate: 0.2,
      retryAfterSeconds: 1,
      resetRate: 0.1,
      truncateZipRate: 0.5,
      seed: 11,
    });
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    await signEveryone(status);
    try {
      const result = await handle.result();
      expect(result.status).toBe('completed');
      expect(result.archive?.sha256).toBe((await env.sandbox.control.inspect(status.transactionId!))?.zip?.sha256);
    } finally {
      env.sandbox.running.faults.configure({});
    }
  });
});
