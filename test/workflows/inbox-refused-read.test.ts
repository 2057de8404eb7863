// A late copy of a completion (the bridge delivers it again after its transaction workflow archived it and ended)
// reaches the transaction's inbox, and the provider refuses the inbox's read of its record with a final 4xx (422).
// The inbox must still find the owner, without that record (the run that names the transaction in visibility, or the
// referenceId the bridge routed by), see that it archived, and drop the copy: not wait as for a notification nobody
// owns, close it as orphaned and start a late completion without what the owner left, which archived the ZIP a second
// time, under the bare transaction id instead of the owner's prefix (the explorer's
// inbox-lookup-refused-archives-again). When the owner cannot be told at first, it is looked for again before the
// completion is closed as orphaned.
// Real dev server, the provider sandbox behind a proxy that refuses one transaction's reads.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { format } from 'prettier';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createInboxActivities } from '../../activities/inbox.js';
import { deliverNotification, type OwnerDirectory } from '../../src/bridge/deliver.js';
import { inboxIdFor, inboxStatusQuery, type EsignInboxWorkflow } from '../../src/definitions/inbox.js';
import { lateCompletionIdFor } from '../../src/definitions/late-completion.js';
import { workflowIdFor } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';
import { CURRENT_VERSION } from '../support/code-versions.js';
import { sandboxOwners } from '../support/bridge.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { eventually } from '../support/eventually.js';
import { ProviderProxy } from '../support/provider-proxy.js';

/** Short, so the code before the fix shows its orphaned late completion within the test. */
const ORPHAN_AFTER = '4 seconds';

let env: EsignTestEnv;
let proxy: ProviderProxy;
/** Transactions whose inbox's first owner lookup fails (the owner cannot be told at first). */
const lookupFailsOnce = new Set<string>();

beforeAll(async () => {
  env = await startEsignTestEnv({
    providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    wrapActivities: (activities) => ({
      ...activities,
      async findTransactionOwner(input) {
        if (Context.current().info.workflowType === 'esignInbox' && lookupFailsOnce.delete(input.transactionId))
          throw ApplicationFailure.nonRetryable('the test: visibility is down', FailureType.ProviderUnavailable);
        return activities.findTransactionOwner(input);
      },
    }),
  });
});
afterAll(async () => {
  await env?.close();
  await proxy?.close();
});

/**
 * These paths' inbox histories (test/replay/histories/<current version>/, replayed by test/workflows/replay.test.ts): written when
 * RECORD_INBOX_HISTORIES=1, from the run that just settled.
 */
async function record(handle: WorkflowHandle, file: string): Promise<void> {
  if (process.env.RECORD_INBOX_HISTORIES !== '1') return;
  const path = fileURLToPath(new URL(`../replay/histories/${CURRENT_VERSION}/${file}`, import.meta.url));
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, await format(historyToJSON(await handle.fetchHistory()), { filepath: path }));
}

/** Everything archived for the transaction, as folders under the archive (`<prefix>/<transactionId>`). */
async function archivedFolders(transactionId: string): Promise<string[]> {
  return (await readdir(env.archiveDir, { recursive: true })).filter((f) => f.endsWith(transactionId)).sort();
}

/** A transaction signed and archived by its own workflow under `tenant-a`; its workflow has ended. */
async function archivedByItsOwner() {
  const { handle } = await env.start(env.input({ archivePrefix: 'tenant-a', reconcileInterval: '1 day' }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  const ids = { transactionId: status.transactionId!, esignId: status.esignId! };
  await deliverNotification(env.temporal.client, completedWebhook(ids), { taskQueue: env.taskQueue, owners: sandboxOwners(env.sandbox) });
  expect(await handle.result()).toMatchObject({ status: 'completed', transactionId: ids.transactionId });
  expect(await archivedFolders(ids.transactionId)).toEqual([`tenant-a/${ids.transactionId}`]);
  return { referenceId: status.referenceId, ids };
}

/** The provider answers the next `times` reads of the transaction's record by the worker with a final 422. */
function refuseReadsOf(transactionId: string, times: number): void {
  let left = times;
  proxy.answer = (method, path) =>
    method === 'GET' && path.endsWith(`/transactions/${transactionId}`) && left-- > 0
      ? { status: 422, detail: 'the test refuses this read' }
      : undefined;
}

/** A bridge whose own read of the record was refused (4xx): it knows no owner, and hands the completion to the inbox. */
const refusedToTheBridge: OwnerDirectory = { referenceOf: async () => null, statusOf: async () => null };

/**
 * Delivers the late copy through the bridge, and waits until the inbox has settled it: it found the owner finished, or
 * it started a late completion (the code before the fix, after the orphan timeout). Returns what it did, and the
 * inbox once its history holds the retention's timer after the orphan timer (a run settled, to record).
 */
async function lateCopy(ids: { transactionId: string; esignId: string }, owners: OwnerDirectory) {
  const delivered = await deliverNotification(env.temporal.client, completedWebhook(ids), {
    taskQueue: env.taskQueue,
    owners,
    orphanAfter: ORPHAN_AFTER,
  });
  expect(delivered).toEqual({ route: 'inbox', workflowId: inboxIdFor(ids.transactionId) });
  const inbox = env.temporal.client.workflow.getHandle<EsignInboxWorkflow>(inboxIdFor(ids.transactionId));
  const late = env.temporal.client.workflow.getHandle(lateCompletionIdFor(ids.transactionId));
  const lateStarted = () =>
    late.describe().then(
      () => true,
      () => false,
    );
  const settled = await eventually(
    'the inbox to settle the late copy',
    async () => {
      const status = await inbox.query(inboxStatusQuery);
      const started = await lateStarted();
      return (status.ownerFinished || started) && { owner: status.owner, ownerFinished: status.ownerFinished, lateCompletion: started };
    },
    30_000,
  );
  // Its archive, to show (one whose read is refused too holds for an operator instead).
  if (settled.lateCompletion)
    await eventually('the late completion', async () => (await late.describe()).status.name !== 'RUNNING', 20_000).catch(() => undefined);
  else
    await eventually('the inbox waiting out its retention', async () => {
      const events = (await inbox.fetchHistory()).events ?? [];
      return events.filter((e) => e.timerStartedEventAttributes).length >= 2 && events.at(-1)?.workflowTaskCompletedEventAttributes;
    });
  return { settled, inbox };
}

it('drops a late copy of a completion its owner archived when the provider refuses the inbox’s read (422)', async () => {
  const { referenceId, ids } = await archivedByItsOwner();
  refuseReadsOf(ids.transactionId, 1);
  // The bridge still reads the record (it routed by it: the owner has ended, so the copy goes to the inbox).
  const { settled, inbox } = await lateCopy(ids, sandboxOwners(env.sandbox));

  // Archived once, under its owner's prefix.
  expect({ ...settled, archived: await archivedFolders(ids.transactionId) }).toEqual({
    owner: workflowIdFor(referenceId),
    ownerFinished: true,
    lateCompletion: false,
    archived: [`tenant-a/${ids.transactionId}`],
  });
  expect(proxy.answered).toContain(`GET /transactions/${ids.transactionId}`);
  await record(inbox, 'inbox-owner-archived-read-refused.json');
}, 120_000);

it('finds the owner in visibility when the bridge’s read is refused too', async () => {
  const { referenceId, ids } = await archivedByItsOwner();
  refuseReadsOf(ids.transactionId, 1);
  // The bridge's read refused as well: it hands the completion to the inbox without a referenceId.
  const { settled } = await lateCopy(ids, refusedToTheBridge);

  // Archived once, under its owner's prefix.
  expect({ ...settled, archived: await archivedFolders(ids.transactionId) }).toEqual({
    owner: workflowIdFor(referenceId),
    ownerFinished: true,
    lateCompletion: false,
    archived: [`tenant-a/${ids.transactionId}`],
  });
}, 120_000);

it('looks for the owner again before it closes a completion as orphaned', async () => {
  const { referenceId, ids } = await archivedByItsOwner();
  // Both of the inbox's reads are refused: the first, then the one before it closes the completion as orphaned.
  refuseReadsOf(ids.transactionId, 2);
  lookupFailsOnce.add(ids.transactionId);
  const { settled, inbox } = await lateCopy(ids, refusedToTheBridge);

  expect(settled).toEqual({ owner: workflowIdFor(referenceId), ownerFinished: true, lateCompletion: false });
  expect(lookupFailsOnce.has(ids.transactionId), 'the first lookup was asked, and failed').toBe(false);
  expect(await archivedFolders(ids.transactionId)).toEqual([`tenant-a/${ids.transactionId}`]);
  await record(inbox, 'inbox-owner-found-before-orphaned.json');
}, 120_000);

it('without visibility, finds the owner by the referenceId the bridge routed by, and cannot tell it with neither', async () => {
  const { referenceId, ids } = await archivedByItsOwner();
  const activities = createInboxActivities();
  const findTransactionOwner = (input: Parameters<typeof activities.findTransactionOwner>[0]) => activities.findTransactionOwner(input);
  // A server without advanced visibility (as the time-skipping test server): every listing fails.
  const blind = new Client({ connection: env.temporal.client.connection, namespace: env.temporal.namespace });
  blind.workflow.list = () => {
    throw new Error('no advanced visibility');
  };
  const pastTheLag = new MockActivityEnvironment(
    { attempt: 5, scheduledTimestampMs: Date.now() - 15_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: blind },
  );
  expect(await pastTheLag.run(findTransactionOwner, { transactionId: ids.transactionId, referenceId, unconfirmed: true })).toMatchObject({
    owner: 'ended',
    ownerWorkflowId: workflowIdFor(referenceId),
    outcome: 'completed',
    archivePrefix: 'tenant-a',
  });
  await expect(
    pastTheLag.run(findTransactionOwner, { transactionId: ids.transactionId, referenceId: null, unconfirmed: true }),
  ).rejects.toMatchObject({ nonRetryable: true, message: expect.stringContaining('cannot be told') as string });
});
