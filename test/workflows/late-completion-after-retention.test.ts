// A completion that arrives after its transaction workflow ended, on the
// time-skipping test server: the owner ends at its deadline; later the
// withdrawn transaction is sent again and signed. The bridge finds no running
// owner, so the completion starts an inbox with no owner, which must archive
// it at once (not after `orphanAfter`, 7 days), with the ended owner's
// archive prefix and callback.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deliverNotification } from '../../src/bridge/deliver.js';
import { sandboxOwners } from '../support/bridge.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { lateCompletionIdFor } from '../../src/definitions/late-completion.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';
import type { esignInbox } from '../../workflows/inbox.js';
import type { esignLateCompletion } from '../../workflows/late-completion.js';
import { completedWebhook } from '../support/esign-env.js';
import { eventually } from '../support/eventually.js';
import { EventReceiver } from '../support/event-receiver.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { leaseInput, resultOrWhereItStalled, timeSkippingWorker } from '../support/time-skipping.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const QUEUE = 'late-after-retention';
let env: TestWorkflowEnvironment;
let sandbox: TestSandbox;
let receiver: EventReceiver;
let pdf: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  sandbox = await startTestSandbox();
  receiver = await EventReceiver.start(secret);
  [pdf] = (await samplePdfFiles(['Lease'])) as [string];
});
afterAll(async () => {
  await receiver?.close();
  await sandbox?.close();
  await env?.teardown();
});

it('archives a completion that arrives after its owner ended at once, not after days', async () => {
  const worker = await timeSkippingWorker(env, sandbox, pdf, QUEUE, { callbackSecrets: [secret], allowedUrls: [receiver.server.url] });
  await worker.runUntil(async () => {
    const referenceId = 'after-retention-1';
    const { handle } = await startEsignTransaction(
      env.client,
      leaseInput(pdf, {
        referenceId,
        signingDeadline: '2 days',
        reconcileInterval: '1 day',
        archivePrefix: 'tenant-a',
        callbackUrl: receiver.url,
      }),
      { taskQueue: QUEUE },
    );
    // The deadline passes unsigned: withdrawn at the provider (a draft again), the workflow ends expired.
    const owner = await resultOrWhereItStalled(handle);
    expect(owner).toMatchObject({ status: 'expired', endedBy: 'deadline' });
    const transactionId = owner.transactionId!;
    // No inbox: webhooks reach the transaction's own workflow while it runs (docs/webhooks.md).
    const inbox = env.client.workflow.getHandle<typeof esignInbox>(inboxIdFor(transactionId));
    await expect(inbox.describe()).rejects.toThrow(WorkflowNotFoundError);

    // Then someone sends the withdrawn transaction again through the API, and it is signed.
    const record = await sandbox.client.getTransaction(transactionId);
    await sandbox.client.updateTransaction(transactionId, {
      status: 'esign_pending',
      referenceId,
      documents: record.documents.map((d) => ({
        title: d.title!,
        StoragePath: d.StoragePath,
        tags: d.tags ?? [],
        ...(d.id ? { id: d.id } : {}),
      })),
      participants: record.participants.map(({ status: _s, signedAt: _a, declinedAt: _d, declineReason: _r, ...p }) => p) as never,
    });
    for (const p of record.participants) await sandbox.control.signAs(transactionId, p.id);
    await deliverNotification(env.client, completedWebhook({ transactionId, esignId: owner.esignId! }), {
      taskQueue: QUEUE,
      owners: sandboxOwners(sandbox),
    });

    // Nothing awaits a result here, so no time is skipped: only a prompt start archives within the wait.
    const late = env.client.workflow.getHandle<typeof esignLateCompletion>(lateCompletionIdFor(transactionId));
    await eventually('the late completion', async () => (await late.describe()).status.name === 'COMPLETED', 30_000);
    const result = await late.result();
    expect(result).toMatchObject({
      status: 'archived',
      report: {
        status: 'completed',
        referenceId,
        transactionId,
        reason: 'completed at the provider after the transaction workflow ended expired',
      },
    });
    // In workflow time as well: the inbox the completion started started it at once.
    const [reopened, lateRun] = await Promise.all([inbox.describe(), late.describe()]);
    expect(lateRun.startTime.getTime() - reopened.startTime.getTime()).toBeLessThan(60_000);

    // Under the ended workflow's archive prefix (from its input), checked against what it uploaded (from its result).
    const archive = result.report!.archive!;
    expect(archive.uri).toContain(`tenant-a/${transactionId}`);
    const uploaded = createHash('sha256')
      .update(await readFile(pdf))
      .digest('hex');
    expect(owner.originals).toEqual({ [record.documents[0]!.StoragePath]: uploaded });
    expect(archive.evidence!.documents.map((d) => d.originalSha256)).toEqual([uploaded]);
    // And reported to its callback, after the outcome it reported itself.
    const events = await eventually('the late completion’s event', () => {
      const ours = receiver.events.filter((e) => e.data.referenceId === referenceId).map((e) => e.type);
      return ours.includes('transaction.completed_late') && ours;
    });
    expect(events).toEqual(['transaction.expired', 'transaction.completed_late']);
    // Numbered in the transaction's event log, after its outcome.
    const numbered = receiver.events.filter((e) => e.data.referenceId === referenceId).map((e) => e.sequence);
    expect(numbered).toEqual([1, 2]);
  });
});
