// The owner lookup of a late completion (activities/inbox.ts findTransactionOwner) finds the ended run that owned a
// transaction through visibility, and must not conclude there is no owner, or the wrong one, while visibility lags:
// the completion would be archived without the owner's archive prefix, callback and upload hashes, or archived again
// after its owner archived it. When the referenceId was used again, the workflow of that id now owns another
// transaction (or none yet: it is still uploading or creating it), and such a run is no evidence that it owns the
// completed one. The lookup asks to be tried again until the lag is past.
// The server is real; the lag is a client whose visibility listing shows nothing yet.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createInboxActivities } from '../../activities/inbox.js';
import { EsignTransactionId } from '../../src/definitions/search-attributes.js';
import { WORKFLOW_TYPE, workflowIdFor, type EsignTransactionResult } from '../../src/definitions/transaction.js';
import { connectToTestServer, uniqueTaskQueue, type TemporalTestContext } from '../support/temporal.js';

let temporal: TemporalTestContext;
let worker: Worker;
let running: Promise<void>;
const taskQueue = uniqueTaskQueue('owner-lookup');

beforeAll(async () => {
  temporal = await connectToTestServer();
  worker = await Worker.create({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('../support/ended-owner-workflow.ts', import.meta.url)),
  });
  running = worker.run();
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await temporal?.close();
});

it('a reused referenceId whose earlier run visibility does not show yet: the lookup waits for it', async () => {
  const referenceId = `lag-${randomUUID()}`;
  const workflowId = workflowIdFor(referenceId);
  const earlier = randomUUID();
  // The earlier transaction's run: it ended, completed, having uploaded; its input named an archive prefix.
  const result: EsignTransactionResult = {
    status: 'completed',
    referenceId,
    transactionId: earlier,
    esignId: randomUUID(),
    originals: { 'org/a.pdf': 'ab'.repeat(32) },
  };
  const first = await temporal.client.workflow.start(WORKFLOW_TYPE, {
    workflowId,
    taskQueue,
    args: [{ referenceId, archivePrefix: 'clients/acme' }, undefined, result],
    typedSearchAttributes: [{ key: EsignTransactionId, value: earlier }],
  });
  await first.result();
  // The referenceId used again: its workflow now owns another transaction (no worker serves it: it stays running).
  const now = await temporal.client.workflow.start(WORKFLOW_TYPE, {
    workflowId,
    taskQueue: uniqueTaskQueue('no-worker'),
    args: [{ referenceId }],
    typedSearchAttributes: [{ key: EsignTransactionId, value: randomUUID() }],
  });

  const activities = createInboxActivities();
  const findTransactionOwner = (input: { transactionId: string; referenceId: string | null }) => activities.findTransactionOwner(input);
  const lagging = new Client({ connection: temporal.client.connection, namespace: temporal.namespace });
  // Visibility has not indexed the earlier run's end yet.
  lagging.workflow.list = (() => ({ async *[Symbol.asyncIterator]() {} })) as unknown as typeof lagging.workflow.list;
  const firstAttempt = new MockActivityEnvironment(
    { attempt: 1, scheduledTimestampMs: Date.now(), currentAttemptScheduledTimestampMs: Date.now() },
    { client: lagging },
  );
  await expect(firstAttempt.run(findTransactionOwner, { transactionId: earlier, referenceId })).rejects.toMatchObject({
    nonRetryable: false,
    message: expect.stringContaining('not in visibility yet') as string,
  });

  // Tried again once visibility shows it: the earlier run, with what it left.
  const retried = new MockActivityEnvironment(
    { attempt: 2, scheduledTimestampMs: Date.now() - 3_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: temporal.client },
  );
  expect(await retried.run(findTransactionOwner, { transactionId: earlier, referenceId })).toEqual({
    owner: 'ended',
    ownerWorkflowId: workflowId,
    outcome: 'completed',
    archivePrefix: 'clients/acme',
    originals: result.originals,
  });

  // A transaction no run ever named (another system used the referenceId) is given up on once the lag is past.
  const late = new MockActivityEnvironment(
    { attempt: 5, scheduledTimestampMs: Date.now() - 15_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: temporal.client },
  );
  expect(await late.run(findTransactionOwner, { transactionId: randomUUID(), referenceId })).toEqual({
    owner: 'ended',
    ownerWorkflowId: null,
    outcome: null,
  });
  await now.terminate('test over');
});

it('a reused referenceId whose new run has no transaction id yet: the lookup waits for the ended run, not for the new one', async () => {
  const referenceId = `unset-${randomUUID()}`;
  const workflowId = workflowIdFor(referenceId);
  const earlier = randomUUID();
  // The earlier transaction's run: cancelled, having uploaded; its input named an archive prefix and a callback.
  const result: EsignTransactionResult = {
    status: 'cancelled',
    referenceId,
    transactionId: earlier,
    esignId: randomUUID(),
    reason: 'changed our mind',
    originals: { 'org/a.pdf': 'cd'.repeat(32) },
  };
  const first = await temporal.client.workflow.start(WORKFLOW_TYPE, {
    workflowId,
    taskQueue,
    args: [{ referenceId, archivePrefix: 'clients/acme', callbackUrl: 'https://backend.example/events' }, undefined, result],
    typedSearchAttributes: [{ key: EsignTransactionId, value: earlier }],
  });
  await first.result();
  // The referenceId used again at once: its new run is still uploading, so it names no transaction yet (no worker
  // serves it: it stays so).
  const now = await temporal.client.workflow.start(WORKFLOW_TYPE, {
    workflowId,
    taskQueue: uniqueTaskQueue('no-worker'),
    args: [{ referenceId }],
  });

  const activities = createInboxActivities();
  const findTransactionOwner = (input: { transactionId: string; referenceId: string | null }) => activities.findTransactionOwner(input);
  const lagging = new Client({ connection: temporal.client.connection, namespace: temporal.namespace });
  // Visibility has not indexed the earlier run's end yet.
  lagging.workflow.list = (() => ({ async *[Symbol.asyncIterator]() {} })) as unknown as typeof lagging.workflow.list;
  const firstAttempt = new MockActivityEnvironment(
    { attempt: 1, scheduledTimestampMs: Date.now(), currentAttemptScheduledTimestampMs: Date.now() },
    { client: lagging },
  );
  await expect(
    firstAttempt.run(findTransactionOwner, { transactionId: earlier, referenceId }),
    'the new run, which names no transaction yet, is not taken for the owner',
  ).rejects.toMatchObject({
    nonRetryable: false,
    message: expect.stringContaining('not in visibility yet') as string,
  });

  // Tried again once visibility shows it: the earlier run, with what it left.
  const retried = new MockActivityEnvironment(
    { attempt: 2, scheduledTimestampMs: Date.now() - 3_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: temporal.client },
  );
  expect(await retried.run(findTransactionOwner, { transactionId: earlier, referenceId })).toEqual({
    owner: 'ended',
    ownerWorkflowId: workflowId,
    outcome: 'cancelled',
    archivePrefix: 'clients/acme',
    callbackUrl: 'https://backend.example/events',
    originals: result.originals,
  });

  // Past the lag with no ended run naming the transaction, the run without an id is the one that may still own it
  // (one whose create has reached the provider and not yet answered): it is waited for, as before.
  const late = new MockActivityEnvironment(
    { attempt: 5, scheduledTimestampMs: Date.now() - 15_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: lagging },
  );
  expect(await late.run(findTransactionOwner, { transactionId: randomUUID(), referenceId })).toEqual({
    owner: 'running',
    ownerWorkflowId: workflowId,
  });
  await now.terminate('test over');
});

it('a reused referenceId whose new run ended without a transaction: what it left is not taken for the owner’s', async () => {
  const referenceId = `unset-ended-${randomUUID()}`;
  const workflowId = workflowIdFor(referenceId);
  const earlier = randomUUID();
  const result: EsignTransactionResult = {
    status: 'expired',
    referenceId,
    transactionId: earlier,
    esignId: randomUUID(),
    originals: { 'org/a.pdf': 'ef'.repeat(32) },
  };
  await temporal.client.workflow
    .start(WORKFLOW_TYPE, {
      workflowId,
      taskQueue,
      args: [{ referenceId, archivePrefix: 'clients/acme' }, undefined, result],
      typedSearchAttributes: [{ key: EsignTransactionId, value: earlier }],
    })
    .then((h) => h.result());
  // The referenceId used again, and that run cancelled before it created anything: it names no transaction, and its
  // prefix and uploads are not the earlier transaction's (a late archive checked against them would refuse it).
  await temporal.client.workflow
    .start(WORKFLOW_TYPE, {
      workflowId,
      taskQueue,
      args: [
        { referenceId, archivePrefix: 'clients/other' },
        undefined,
        { status: 'cancelled', referenceId, transactionId: null, esignId: null, originals: { 'org/b.pdf': '01'.repeat(32) } },
      ],
    })
    .then((h) => h.result());

  const activities = createInboxActivities();
  const findTransactionOwner = (input: { transactionId: string; referenceId: string | null }) => activities.findTransactionOwner(input);
  const lagging = new Client({ connection: temporal.client.connection, namespace: temporal.namespace });
  lagging.workflow.list = (() => ({ async *[Symbol.asyncIterator]() {} })) as unknown as typeof lagging.workflow.list;
  const firstAttempt = new MockActivityEnvironment(
    { attempt: 1, scheduledTimestampMs: Date.now(), currentAttemptScheduledTimestampMs: Date.now() },
    { client: lagging },
  );
  await expect(firstAttempt.run(findTransactionOwner, { transactionId: earlier, referenceId })).rejects.toMatchObject({
    nonRetryable: false,
    message: expect.stringContaining('not in visibility yet') as string,
  });
  const retried = new MockActivityEnvironment(
    { attempt: 2, scheduledTimestampMs: Date.now() - 3_000, currentAttemptScheduledTimestampMs: Date.now() },
    { client: temporal.client },
  );
  expect(await retried.run(findTransactionOwner, { transactionId: earlier, referenceId })).toEqual({
    owner: 'ended',
    ownerWorkflowId: workflowId,
    outcome: 'expired',
    archivePrefix: 'clients/acme',
    originals: result.originals,
  });
});
