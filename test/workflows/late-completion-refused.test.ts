// Issue 39, item 2: a late completion whose ZIP is refused (verification, or a 4xx from the provider on the read or
// the download) is not an end. It failed the late-completion workflow before: the provider had its 200 and the
// inbox does not start it again, so a signed document was never archived and the integrator heard nothing. Now it
// waits in archive_invalid with the reason, as a transaction does, tells the integrator, and an operator's
// `esign retry-archive` (by transactionId or referenceId) archives it once the cause is fixed. End to end on the
// suite's dev server with the provider sandbox over HTTP; and the recorded history of that path replays.
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvidencePolicy } from '../../src/archive/evidence.js';
import { deliverNotification } from '../../src/bridge/deliver.js';
import * as commands from '../../src/cli/commands.js';
import type { CliContext } from '../../src/cli/context.js';
import { LateCompletionEnded, retryEsignArchive } from '../../src/client/transactions.js';
import {
  LATE_COMPLETION_WORKFLOW_TYPE,
  lateCompletionIdFor,
  lateCompletionStatusQuery,
  type EsignLateCompletionWorkflow,
  type LateCompletionStatus,
} from '../../src/definitions/late-completion.js';
import { cancelUpdate, workflowIdFor, type EsignTransactionStatus } from '../../src/definitions/transaction.js';
import { EsignReferenceId, EsignStatus } from '../../src/definitions/search-attributes.js';
import { EsignApiError } from '../../src/esign/errors.js';
import { providerFailure } from '../../src/esign/temporal-failure.js';
import { createCertificateAuthority, parseCertificates } from '../../src/evidence/pki.js';
import { providerTrust, trustAnchorsOnly } from '../../src/evidence/trust.js';
import { FailureType } from '../../src/failures.js';
import { sandboxOwners } from '../support/bridge.js';
import { CURRENT_VERSION } from '../support/code-versions.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { eventually } from '../support/eventually.js';
import { EventReceiver } from '../support/event-receiver.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const PROMPTLY = 30_000;

/** What the worker trusts: the sandbox's CA once the env runs; another CA while a test has the operator's cause. */
const evidence: EvidencePolicy = { signatures: 'require', trust: trustAnchorsOnly([]), requireCompletionCertificate: true };
/** Transactions whose read, or whose ZIP's download, the provider refuses (HTTP 403) while they are here. */
const readRefused = new Set<string>();
const downloadRefused = new Set<string>();
const forbidden = (operation: string) =>
  providerFailure(new EsignApiError({ kind: 'http', operation, status: 403, message: 'HTTP 403: this token may not read it' }));

let env: EsignTestEnv;
let receiver: EventReceiver;
let cli: CliContext;

beforeAll(async () => {
  receiver = await EventReceiver.start(secret);
  env = await startEsignTestEnv({
    deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url], evidence },
    wrapActivities: (activities) => ({
      ...activities,
      async describeTransaction(transactionId) {
        // The late completion's read only: the inbox reads the record first, to find the owner.
        const late = Context.current().info.workflowType === LATE_COMPLETION_WORKFLOW_TYPE;
        if (late && readRefused.has(transactionId)) throw forbidden('getTransaction');
        return activities.describeTransaction(transactionId);
      },
      async archiveCompletedDocuments(input) {
        if (downloadRefused.has(input.transactionId)) throw forbidden('downloadCompletedDocuments');
        return activities.archiveCompletedDocuments(input);
      },
    }),
  });
  evidence.trust = providerTrust(env.sandbox.running);
  cli = { client: env.temporal.client } as CliContext;
});
afterAll(async () => {
  await env?.close();
  await receiver?.close();
});

const lateOf = (transactionId: string): WorkflowHandle<EsignLateCompletionWorkflow> =>
  env.temporal.client.workflow.getHandle<EsignLateCompletionWorkflow>(lateCompletionIdFor(transactionId));

/** The late completion's status once it waits in archive_invalid with `refusals` refusals. */
const held = (transactionId: string, refusals = 1) =>
  eventually(
    `the late completion waiting in archive_invalid (${refusals} refused)`,
    async (): Promise<LateCompletionStatus | false> => {
      const s = await lateOf(transactionId).query(lateCompletionStatusQuery);
      return s.phase === 'archive_invalid' && s.refusals === refusals && s;
    },
    PROMPTLY,
  );

const searchAttribute = async (transactionId: string) => (await lateOf(transactionId).describe()).typedSearchAttributes.get(EsignStatus);

async function archivedFolders(transactionId: string): Promise<string[]> {
  return (await readdir(env.archiveDir, { recursive: true })).filter((f) => f.endsWith(transactionId));
}

/** A transaction workflow with a callback, cancelled while awaiting signatures, and ended: the record is a draft again. */
async function cancelledTransaction() {
  const { handle } = await env.start(env.input({ reconcileInterval: '1 day', callbackUrl: receiver.url }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'withdrawn' }] });
  await handle.result();
  return { status, ids: { transactionId: status.transactionId!, esignId: status.esignId! } };
}

/** Someone sends the withdrawn transaction again through the API, everyone signs, and the completion arrives. */
async function completedLate(status: EsignTransactionStatus): Promise<void> {
  const transactionId = status.transactionId!;
  const record = await env.sandbox.client.getTransaction(transactionId);
  await env.sandbox.client.updateTransaction(transactionId, {
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
  for (const p of status.participants) await env.sandbox.control.signAs(transactionId, p.id);
  await deliverNotification(env.temporal.client, completedWebhook({ transactionId, esignId: status.esignId! }), {
    taskQueue: env.taskQueue,
    owners: sandboxOwners(env.sandbox),
  });
}

const eventsOf = (referenceId: string, type: string) => receiver.of(type).filter((e) => e.data.referenceId === referenceId);

/** A history as `historyToJSON` writes it. */
type Recorded = { events?: { eventType?: string | null }[] | null };

async function updateFailure(p: Promise<unknown>): Promise<{ type?: string; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  return (err as WorkflowUpdateFailedError).cause as { type?: string; message: string };
}

describe('a late completion whose archive is refused', () => {
  it('waits in archive_invalid with the reason, tells the integrator, and is archived by esign retry-archive once fixed', async () => {
    const { status, ids } = await cancelledTransaction();
    const { referenceId } = status;
    const { transactionId } = ids;
    // The operator's cause: the worker trusts another CA than the provider's, so every seal is untrusted.
    const stranger = await createCertificateAuthority({ CN: 'Some other CA' });
    evidence.trust = trustAnchorsOnly(parseCertificates(stranger.certificate));
    try {
      await completedLate(status);
      const refused = await held(transactionId);
      expect(refused).toMatchObject({ transactionId, referenceId, esignId: ids.esignId, result: null });
      expect(refused.archiveProblem).toMatch(/^ArchiveInvalid: completed ZIP rejected: /);
      expect((await lateOf(transactionId).describe()).status.name).toBe('RUNNING');
      expect(await searchAttribute(transactionId)).toBe('archive_invalid');
      expect(await archivedFolders(transactionId)).toEqual([]);

      // The integrator hears of it, numbered in the transaction's log after its outcome.
      const told = await eventually('transaction.archive_invalid', () => eventsOf(referenceId, 'transaction.archive_invalid')[0], PROMPTLY);
      expect(told.data).toEqual({ referenceId, transactionId, problem: refused.archiveProblem });
      expect(told.sequence).toBeGreaterThan(eventsOf(referenceId, 'transaction.cancelled')[0]!.sequence!);

      // A retry before the cause is fixed is refused again, with the reason; the run keeps waiting.
      const again = await updateFailure(retryEsignArchive(env.temporal.client, transactionId));
      expect(again.type).toBe(FailureType.ArchiveInvalid);
      expect(again.message).toMatch(/^refused again: ArchiveInvalid: completed ZIP rejected: /);
      await held(transactionId, 2);
      await eventually('the second refusal told', () => eventsOf(referenceId, 'transaction.archive_invalid').length === 2, PROMPTLY);
    } finally {
      evidence.trust = providerTrust(env.sandbox.running);
    }

    // Fixed: `esign retry-archive <referenceId>` finds the late completion (the transaction workflow ended cancelled).
    await eventually('the late completion visible by its referenceId', async () => {
      const query = `WorkflowId = '${lateCompletionIdFor(transactionId)}' AND ${EsignReferenceId.name} = '${referenceId}' AND ${EsignStatus.name} = 'archive_invalid'`;
      return (await env.temporal.client.workflow.count(query)).count === 1;
    });
    const archived = await commands.retryArchive(cli, referenceId);
    expect(archived).toMatchObject({
      status: 'completed',
      referenceId,
      transactionId,
      reason: 'completed at the provider after the transaction workflow ended cancelled',
    });
    expect(await lateOf(transactionId).result()).toEqual({
      status: 'archived',
      transactionId,
      providerStatus: 'completed',
      report: archived,
    });
    expect(await searchAttribute(transactionId)).toBe('completed_late');
    expect(await archivedFolders(transactionId)).toHaveLength(1);
    const late = await eventually('transaction.completed_late', () => eventsOf(referenceId, 'transaction.completed_late')[0], PROMPTLY);
    expect(late.data).toMatchObject({ status: 'completed', archive: { sha256: archived.archive!.sha256 } });
    const refusals = eventsOf(referenceId, 'transaction.archive_invalid').map((e) => e.sequence!);
    expect(late.sequence).toBeGreaterThan(Math.max(...refusals));
  });

  it('waits in archive_invalid when the provider refuses the read or the download (a 4xx), and archives on a retry', async () => {
    const { status, ids } = await cancelledTransaction();
    const { referenceId } = status;
    const { transactionId } = ids;
    readRefused.add(transactionId);
    downloadRefused.add(transactionId);
    try {
      await completedLate(status);
      // The read is refused: the referenceId is not known yet, so the transaction's log cannot be told.
      const unread = await held(transactionId);
      expect(unread).toMatchObject({ referenceId: null, esignId: null });
      expect(unread.archiveProblem).toMatch(/^ProviderRejected: getTransaction: HTTP 403/);

      // The operator fixes the read; the download is still refused: `esign retry-archive <transactionId>`.
      readRefused.delete(transactionId);
      const again = await updateFailure(commands.retryArchive(cli, transactionId));
      expect(again.type).toBe(FailureType.ProviderRejected);
      expect(again.message).toMatch(/^refused again: ProviderRejected: downloadCompletedDocuments: HTTP 403/);
      const undownloaded = await held(transactionId, 2);
      expect(undownloaded).toMatchObject({ referenceId, esignId: ids.esignId });
      const told = await eventually('transaction.archive_invalid', () => eventsOf(referenceId, 'transaction.archive_invalid')[0], PROMPTLY);
      expect(told.data).toEqual({ referenceId, transactionId, problem: undownloaded.archiveProblem });
    } finally {
      readRefused.delete(transactionId);
      downloadRefused.delete(transactionId);
    }
    const archived = await commands.retryArchive(cli, transactionId);
    expect(archived).toMatchObject({ status: 'completed', referenceId, transactionId });
    expect(await lateOf(transactionId).result()).toMatchObject({ status: 'archived', report: archived });
    expect(await archivedFolders(transactionId)).toHaveLength(1);
  });

  // Found by the explorer (explore/regressions/late-retry-by-transaction-id.json): a retry by the transactionId of a
  // late completion an operator had terminated in archive_invalid went to esign-<transactionId>, a workflow that never
  // existed, and was answered "not found" for it. It says the late completion has ended, and how.
  it('answers a retry of a late completion that has ended (terminated in archive_invalid) by naming it', async () => {
    const transactionId = randomUUID();
    readRefused.add(transactionId);
    try {
      await env.temporal.client.workflow.start<EsignLateCompletionWorkflow>(LATE_COMPLETION_WORKFLOW_TYPE, {
        workflowId: lateCompletionIdFor(transactionId),
        taskQueue: env.taskQueue,
        args: [{ transactionId, ownerOutcome: null }],
      });
      await held(transactionId);
    } finally {
      readRefused.delete(transactionId);
    }
    // docs/operations.md: an operator may resolve one by terminating it.
    await lateOf(transactionId).terminate('resolved by the operator');
    const err = await retryEsignArchive(env.temporal.client, transactionId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LateCompletionEnded);
    // Still the documented answer when nothing of that id waits.
    expect(err).toBeInstanceOf(WorkflowNotFoundError);
    expect(err).toMatchObject({ workflowId: lateCompletionIdFor(transactionId) });
    expect((err as Error).message).toBe(
      `the late completion of transaction ${transactionId} (${lateCompletionIdFor(transactionId)}) has ended terminated: ` +
        'nothing of that id waits for a retry of its archive',
    );
    await expect(commands.retryArchive(cli, transactionId)).rejects.toThrow(/has ended terminated/);
    // An id that names nothing at all is still "not found" for the transaction workflow of that id.
    const nothing = randomUUID();
    await expect(retryEsignArchive(env.temporal.client, nothing)).rejects.toMatchObject({
      name: 'WorkflowNotFoundError',
      workflowId: workflowIdFor(nothing),
    });
  });

  it('ends not_completed, truthfully, when the provider does not know the transaction (a 404 on the read)', async () => {
    const transactionId = randomUUID();
    const result = await env.temporal.client.workflow.execute<EsignLateCompletionWorkflow>(LATE_COMPLETION_WORKFLOW_TYPE, {
      workflowId: lateCompletionIdFor(transactionId),
      taskQueue: env.taskQueue,
      args: [{ transactionId, ownerOutcome: null }],
    });
    expect(result).toEqual({ status: 'not_completed', transactionId, providerStatus: 'not_found', report: null });
  });
});

// Recorded against a dev server and the provider sandbox by `npm run replay:regenerate -- late-completion-refused-then-retried`;
// test/workflows/replay.test.ts replays it with the rest of the current version's; here, what it must show.
describe('the recorded history of a late completion whose ZIP was refused', () => {
  const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

  it('replays refused, refused again, then retried and archived', async () => {
    const file = new URL(`../replay/histories/${CURRENT_VERSION}/late-completion-refused-then-retried.json`, import.meta.url);
    const history = JSON.parse(await readFile(file, 'utf8')) as Recorded;
    const updates = (history.events ?? []).filter((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
    expect(updates).toHaveLength(2);
    expect(history.events?.at(-1)?.eventType).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    await Worker.runReplayHistory({ workflowsPath }, history, 'late-completion-refused-then-retried');
  }, 120_000);
});
