// Completions that no transaction workflow waits for, end to end on the
// suite's dev server with the provider sandbox over HTTP: how they are
// reported, that a late run which did not archive never keeps a later real
// completion from being archived (and one that did is never repeated), that
// the archive checks the provider signed what the owner uploaded, and how an
// inbox with no owner finds out whether one will come.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransactionRef } from '../../activities/transactions.js';
import { deliverNotification } from '../../src/bridge/deliver.js';
import { sandboxOwners } from '../support/bridge.js';
import {
  cancelUpdate,
  WORKFLOW_TYPE,
  workflowIdFor,
  statusQuery,
  esignCompletedSignal,
  type EsignTransactionResult,
  type EsignTransactionStatus,
} from '../../src/definitions/transaction.js';
import { lateCompletionIdFor, lateCompletionStatusQuery } from '../../src/definitions/late-completion.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';
import type { EsignLateCompletionWorkflow, LateCompletionResult } from '../../src/definitions/late-completion.js';
import { EsignTransactionId } from '../../src/definitions/search-attributes.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { eventually } from '../support/eventually.js';
import { EventReceiver } from '../support/event-receiver.js';
import { participant } from '../support/fixtures.js';
import { uniqueTaskQueue } from '../support/temporal.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
/** Long enough for anything that happens at once; far shorter than the days an inbox used to wait. */
const PROMPTLY = 20_000;

// The transaction workflow whose referenceId is here holds its create back, as a slow create response would:
// the provider's completion arrives before the workflow knows its transaction's ids.
let heldRef: string | undefined;
let releaseCreate: () => void = () => undefined;
let createdAtProvider: (ref: TransactionRef) => void = () => undefined;

let env: EsignTestEnv;
let receiver: EventReceiver;
let endedOwners: Worker;
let endedOwnersRunning: Promise<void>;
const endedOwnerQueue = uniqueTaskQueue('ended-owner');

beforeAll(async () => {
  receiver = await EventReceiver.start(secret);
  env = await startEsignTestEnv({
    deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] },
    wrapActivities: (activities) => ({
      ...activities,
      async createTransaction(request) {
        const ref = await activities.createTransaction(request);
        if (request.referenceId === heldRef) {
          createdAtProvider(ref);
          await new Promise<void>((resolve) => (releaseCreate = resolve));
        }
        return ref;
      },
    }),
  });
  endedOwners = await Worker.create({
    connection: env.temporal.nativeConnection,
    namespace: env.temporal.namespace,
    taskQueue: endedOwnerQueue,
    workflowsPath: fileURLToPath(new URL('../support/ended-owner-workflow.ts', import.meta.url)),
  });
  endedOwnersRunning = endedOwners.run();
});
afterAll(async () => {
  releaseCreate();
  endedOwners?.shutdown();
  await endedOwnersRunning;
  await env?.close();
  await receiver?.close();
});

type Ids = { transactionId: string; esignId: string };

const deliver = (ids: Ids) =>
  deliverNotification(env.temporal.client, completedWebhook(ids), { taskQueue: env.taskQueue, owners: sandboxOwners(env.sandbox) });
const lateOf = (transactionId: string): WorkflowHandle<EsignLateCompletionWorkflow> =>
  env.temporal.client.workflow.getHandle<EsignLateCompletionWorkflow>(lateCompletionIdFor(transactionId));

/** The result of the transaction's latest late-completion run once it has completed, if it is not `notRunId`. */
async function lateResult(transactionId: string, notRunId?: string): Promise<(LateCompletionResult & { runId: string }) | false> {
  const described = await lateOf(transactionId).describe();
  if (described.runId === notRunId || described.status.name !== 'COMPLETED') return false;
  return { ...(await lateOf(transactionId).result()), runId: described.runId };
}

async function lateRuns(transactionId: string): Promise<string[]> {
  const runs: string[] = [];
  for await (const wf of env.temporal.client.workflow.list({ query: `WorkflowId = '${lateCompletionIdFor(transactionId)}'` }))
    runs.push(wf.runId);
  return runs;
}

async function archivedFolders(transactionId: string): Promise<string[]> {
  return (await readdir(env.archiveDir, { recursive: true })).filter((f) => f.endsWith(transactionId));
}

/** What each call of an activity of the transaction's inbox answered, in order (payloads are plain JSON here). */
async function inboxAnswers<T>(transactionId: string, activityType: string): Promise<T[]> {
  const events = (await env.temporal.client.workflow.getHandle(inboxIdFor(transactionId)).fetchHistory()).events ?? [];
  const calls = new Set(
    events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType).map((e) => String(e.eventId)),
  );
  return events.flatMap((e) => {
    const done = e.activityTaskCompletedEventAttributes;
    if (!done || !calls.has(String(done.scheduledEventId))) return [];
    return [JSON.parse(Buffer.from(done.result!.payloads![0]!.data!).toString('utf8')) as T];
  });
}

/** A transaction workflow cancelled while awaiting signatures, and ended: the provider's record is withdrawn to a draft. */
async function cancelledTransaction(overrides: Parameters<EsignTestEnv['input']>[0] = {}) {
  const { handle } = await env.start(env.input({ reconcileInterval: '1 day', ...overrides }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  expect(await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'withdrawn' }] })).toMatchObject({ status: 'cancelled' });
  await handle.result();
  return { handle, status, ids: { transactionId: status.transactionId!, esignId: status.esignId! } };
}

/** Someone sends the withdrawn transaction again through the API, and everyone signs it. */
async function resendAndSign(status: EsignTransactionStatus): Promise<void> {
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
}

const sha256 = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex');

/**
 * A transaction created at the provider by hand (no workflow), from the env's
 * two PDFs, with one signer: `originals` are the SHA-256 of what was uploaded.
 */
async function providerTransaction(referenceId: string) {
  const uploaded = await env.sandbox.client.uploadDocuments(env.pdfs.map((path) => ({ path })));
  const signer = participant({ email: 'sam@example.com', firstName: 'Sam', lastName: 'Signer' });
  const record = await env.sandbox.client.createTransaction({
    status: 'esign_pending',
    referenceId,
    notifyParticipants: { email: false },
    documents: uploaded.map((u, i) => ({
      title: `Document ${i + 1}`,
      StoragePath: u.StoragePath,
      tags: [{ type: 'SIGNATURETEMPLATE' as const, x: 72, y: 120, width: 200, height: 30, signerId: signer.id, customData: {}, page: 0 }],
    })),
    participants: [signer],
  });
  const hashes = await Promise.all(env.pdfs.map(sha256));
  const originals: Record<string, string> = Object.fromEntries(uploaded.map((u, i) => [u.StoragePath, hashes[i]!]));
  return {
    ids: { transactionId: record.id!, esignId: record.esignId! },
    originals,
    sign: () => env.sandbox.control.signAs(record.id!, signer.id),
  };
}

describe('a completion after its workflow ended', () => {
  it('is reported to the callback as transaction.completed_late', async () => {
    const { status, ids } = await cancelledTransaction({ callbackUrl: receiver.url });
    await resendAndSign(status);
    await deliver(ids);

    const late = await eventually('the late completion', () => lateResult(ids.transactionId), PROMPTLY);
    expect(late).toMatchObject({ status: 'archived' });
    const ours = (type: string) => receiver.of(type).filter((e) => e.data.referenceId === status.referenceId);
    const reported = await eventually('the late completion’s event', () => ours('transaction.completed_late')[0], PROMPTLY);
    expect(reported.data).toMatchObject({
      status: 'completed',
      referenceId: status.referenceId,
      transactionId: ids.transactionId,
      reason: 'completed at the provider after the transaction workflow ended cancelled',
      archive: { sha256: late.report!.archive!.sha256 },
    });
    // Checked against what the cancelled workflow uploaded, which the inbox read from its result.
    expect(late.report!.archive!.evidence!.documents.map((d) => d.originalSha256)).toEqual(await Promise.all(env.pdfs.map(sha256)));
    // Not also as an ordinary completion (the receiver has every event the cancelled workflow and the late run sent).
    expect(ours('transaction.completed')).toEqual([]);
    expect(ours('transaction.cancelled')).toHaveLength(1);
  });

  it('is archived late when its referenceId has a new transaction running, which goes on untouched', async () => {
    const { status, ids } = await cancelledTransaction();
    // The referenceId is used again: the bridge routes the earlier transaction's completion to the new run.
    const { handle: next } = await env.start(env.input({ referenceId: status.referenceId, reconcileInterval: '1 day' }));
    const nextStatus = await waitForPhase(next, 'awaiting_signatures');
    await resendAndSign(status);
    expect(await deliver(ids)).toEqual({ route: 'transaction', workflowId: workflowIdFor(status.referenceId) });

    const late = await eventually('the late completion', () => lateResult(ids.transactionId), PROMPTLY);
    expect(late).toMatchObject({ status: 'archived', report: { status: 'completed', transactionId: ids.transactionId } });
    const now = await next.query(statusQuery);
    expect(now).toMatchObject({ phase: 'awaiting_signatures', transactionId: nextStatus.transactionId });
    // A forged completion naming a transaction the provider does not know changes nothing either.
    await next.signal(esignCompletedSignal, completedWebhook({ transactionId: randomUUID(), esignId: randomUUID() }));
    // The positive marker: the provider was asked about it (the second read of a stray, the first being the real one).
    const reads = async () =>
      ((await next.fetchHistory()).events ?? []).filter((e) => {
        const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
        return data && Buffer.from(data).toString().includes('"describeTransaction"');
      }).length;
    await eventually('the stray looked at', async () => (await reads()) >= 2 || undefined);
    expect(await lateRuns(ids.transactionId)).toHaveLength(1);
    await next.executeUpdate(cancelUpdate, { args: [{ reason: 'done' }] });
  });

  it('is stale when its own run archived it, even when the next run of its referenceId receives it', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day' }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    const ids = { transactionId: status.transactionId!, esignId: status.esignId! };
    await deliver(ids);
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    // The referenceId is used again; the provider redelivers the first transaction's completion.
    const { handle: next } = await env.start(env.input({ referenceId: status.referenceId, reconcileInterval: '1 day' }));
    await waitForPhase(next, 'awaiting_signatures');
    expect(await deliver(ids)).toEqual({ route: 'transaction', workflowId: workflowIdFor(status.referenceId) });
    // The positive marker: the next run asked how the first one ended (it found it archived), and a workflow task
    // acted on the answer; a late completion would have been scheduled in that task.
    const events = await eventually('the owner looked up and acted on', async () => {
      const all = (await next.fetchHistory()).events ?? [];
      const scheduled = all.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'findTransactionOwner');
      const done = all.findIndex((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId));
      return done >= 0 && all.slice(done).some((e) => e.workflowTaskCompletedEventAttributes) && all;
    });
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startLateCompletion')).toEqual([]);
    expect(await lateRuns(ids.transactionId)).toEqual([]);
    expect(await archivedFolders(ids.transactionId)).toHaveLength(1);
    expect((await next.query(statusQuery)).phase).toBe('awaiting_signatures');
    await next.executeUpdate(cancelUpdate, { args: [{ reason: 'done' }] });
  });

  it('is refused while the provider does not confirm it, archived once it does, and only once', async () => {
    const { status, ids } = await cancelledTransaction();
    // A completion the provider does not confirm (its record is a draft) and nobody waits for: the bridge asks the
    // provider to redeliver (503) rather than park it, and nothing starts.
    await expect(deliver(ids)).rejects.toThrow(/does not confirm this completion yet \(its status is draft\)/);
    await expect(env.temporal.client.workflow.getHandle(inboxIdFor(ids.transactionId)).describe()).rejects.toThrow();

    // Then it is sent again, signed, and its real completion arrives.
    await resendAndSign(status);
    await deliver(ids);
    const first = await eventually('a late run that archives', () => lateResult(ids.transactionId), PROMPTLY);
    expect(first).toMatchObject({ status: 'archived', report: { status: 'completed', referenceId: status.referenceId } });

    // One more completion asks again and is told it is archived: no second run, one archive.
    await deliver(ids);
    const answers = await eventually('the second answer to startLateCompletion', async () => {
      const all = await inboxAnswers<{ workflowId: string; alreadyArchived?: boolean }>(ids.transactionId, 'startLateCompletion');
      return all.length === 2 && all;
    });
    expect(answers[1]).toMatchObject({ alreadyArchived: true });
    expect(await lateRuns(ids.transactionId)).toHaveLength(1);
    expect(await archivedFolders(ids.transactionId)).toHaveLength(1);
  });

  it('is archived after a late run that failed (terminated by an operator)', async () => {
    const { status, ids } = await cancelledTransaction();
    await resendAndSign(status);
    const late = lateOf(ids.transactionId);
    // Every ZIP download is cut off (the bridge's and the inbox's reads still work).
    await env.sandbox.control.setFaults({ truncateZipRate: 1 });
    let failedRun: string;
    try {
      await deliver(ids);
      // The archive keeps failing; an operator gives up on the run that keeps retrying.
      failedRun = await eventually(
        'a late run retrying the provider',
        async () => {
          const d = await late.describe();
          return (d.raw.pendingActivities?.[0]?.attempt ?? 0) >= 2 && d.runId;
        },
        PROMPTLY,
      );
      await late.terminate('the provider is down; its completion will be archived when it comes again');
    } finally {
      await env.sandbox.control.setFaults({});
    }
    expect((await late.describe()).status.name).toBe('TERMINATED');

    await deliver(ids);
    const archived = await eventually('a late run that archives', () => lateResult(ids.transactionId, failedRun), PROMPTLY);
    expect(archived).toMatchObject({ status: 'archived', report: { referenceId: status.referenceId } });
    expect(await archivedFolders(ids.transactionId)).toHaveLength(1);
  });
});

describe('the late archive checks that the provider signed what the owner uploaded', () => {
  /** The owner ended (here cancelled) with its uploads' hashes in its result, where the inbox's owner lookup reads them. */
  async function ownerEnded(ids: Ids, referenceId: string, originals: Record<string, string>) {
    const result: EsignTransactionResult = {
      status: 'cancelled',
      referenceId,
      transactionId: ids.transactionId,
      esignId: ids.esignId,
      endedBy: 'request',
      originals,
    };
    await env.temporal.client.workflow.execute(WORKFLOW_TYPE, {
      workflowId: workflowIdFor(referenceId),
      taskQueue: endedOwnerQueue,
      args: [{ referenceId }, undefined, result],
      typedSearchAttributes: [{ key: EsignTransactionId, value: ids.transactionId }],
    });
  }

  it('with the hashes in the ended owner’s result', async () => {
    const referenceId = `ref-${randomUUID()}`;
    const tx = await providerTransaction(referenceId);
    await ownerEnded(tx.ids, referenceId, tx.originals);
    await tx.sign();
    await deliver(tx.ids);

    const late = await eventually('the late completion', () => lateResult(tx.ids.transactionId), PROMPTLY);
    expect(late.status).toBe('archived');
    const expected = Object.values(tx.originals);
    expect(late.report!.archive!.evidence!.documents.map((d) => d.originalSha256)).toEqual(expected);
    expect(late.report!.archive!.evidence!.documents.map((d) => d.providerOriginalSha256)).toEqual(expected);
  });

  it('and refuses a ZIP whose originals are not what the owner uploaded', async () => {
    const referenceId = `ref-${randomUUID()}`;
    const tx = await providerTransaction(referenceId);
    const [first, ...rest] = Object.entries(tx.originals);
    const tampered = { [first![0]]: createHash('sha256').update('something else').digest('hex'), ...Object.fromEntries(rest) };
    await ownerEnded(tx.ids, referenceId, tampered);
    await tx.sign();
    await deliver(tx.ids);

    // Refused, and held for an operator (test/workflows/late-completion-refused.test.ts follows a retry to its archive).
    const late = lateOf(tx.ids.transactionId);
    const held = await eventually(
      'the late completion to hold the refused ZIP',
      async () => {
        const s = await late.query(lateCompletionStatusQuery);
        return s.phase === 'archive_invalid' && s;
      },
      PROMPTLY,
    );
    expect(held.archiveProblem).toMatch(/^ArchiveInvalid: /);
    expect(held.archiveProblem).toMatch(/the provider signed an original with SHA-256 [0-9a-f]{64}, but we uploaded [0-9a-f]{64}/);
    expect(await archivedFolders(tx.ids.transactionId)).toEqual([]);
    await late.terminate('test done');
  });
});

describe('an inbox, when a completion arrives', () => {
  it('archives at once when the owner has ended: its uploads’ hashes from its result, its prefix and callback from its input', async () => {
    const referenceId = `ref-${randomUUID()}`;
    const tx = await providerTransaction(referenceId);
    const archivePrefix = `tenant-${randomUUID().slice(0, 8)}`;
    // The owner ended long ago (its inbox has closed): a stand-in with the transaction workflow's id, type, input and result.
    const ownerResult: EsignTransactionResult = {
      status: 'expired',
      referenceId,
      transactionId: tx.ids.transactionId,
      esignId: tx.ids.esignId,
      endedBy: 'deadline',
      originals: tx.originals,
    };
    await env.temporal.client.workflow.execute(WORKFLOW_TYPE, {
      workflowId: workflowIdFor(referenceId),
      taskQueue: endedOwnerQueue,
      args: [{ referenceId, archivePrefix, callbackUrl: receiver.url }, undefined, ownerResult],
      typedSearchAttributes: [{ key: EsignTransactionId, value: tx.ids.transactionId }],
    });
    await tx.sign();
    await deliver(tx.ids);

    const late = await eventually('the late completion', () => lateResult(tx.ids.transactionId), PROMPTLY);
    expect(late.report).toMatchObject({
      status: 'completed',
      referenceId,
      reason: 'completed at the provider after the transaction workflow ended expired',
    });
    expect(late.report!.archive!.evidence!.documents.map((d) => d.originalSha256)).toEqual(Object.values(tx.originals));
    expect(late.report!.archive!.uri).toContain(`${archivePrefix}/${tx.ids.transactionId}`);
    const reported = await eventually(
      'the late completion’s event',
      () => receiver.of('transaction.completed_late').find((e) => e.data.referenceId === referenceId),
      PROMPTLY,
    );
    expect(reported.data).toMatchObject({ transactionId: tx.ids.transactionId, archive: { sha256: late.report!.archive!.sha256 } });
  });

  it('archives at once when no workflow owns the transaction', async () => {
    const tx = await providerTransaction(`ref-${randomUUID()}`);
    await tx.sign();
    await deliver(tx.ids);
    const late = await eventually('the late completion', () => lateResult(tx.ids.transactionId), PROMPTLY);
    expect(late.report).toMatchObject({ status: 'completed', reason: 'completed at the provider; no transaction workflow waited for it' });
  });

  it('goes to a running owner that does not know its ids yet, which then archives the completion itself', async () => {
    heldRef = `ref-${randomUUID()}`;
    const created = new Promise<TransactionRef>((resolve) => (createdAtProvider = resolve));
    const { handle } = await env.start(env.input({ referenceId: heldRef, reconcileInterval: '1 day' }));
    const ids = await created;
    for (const p of (await env.sandbox.client.getTransaction(ids.transactionId)).participants)
      await env.sandbox.control.signAs(ids.transactionId, p.id);
    // The bridge finds the owner by the provider's record: no inbox, while the owner's create is still held back.
    expect(await deliver(ids)).toEqual({ route: 'transaction', workflowId: workflowIdFor(heldRef) });
    await expect(env.temporal.client.workflow.getHandle(inboxIdFor(ids.transactionId)).describe()).rejects.toThrow();
    releaseCreate();

    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', transactionId: ids.transactionId });
    expect(
      (await handle.fetchHistory()).events!.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'esignCompleted'),
    ).toBe(true);
    expect(await lateRuns(ids.transactionId)).toEqual([]);
  });
});
