// A transaction that lives a year, on the time-skipping test server: polls at
// the production floor (1 minute, backing off while nothing happens), continues
// as new before its history grows large, and still completes when its signer
// signs in month ten, by a webhook signal sent to whichever run is current.
import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { esignCompletedSignal, statusQuery } from '../../src/definitions/transaction.js';
import { MAX_EVENTS_PER_RUN, type esignTransaction } from '../../workflows/esign-transaction.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { leaseInput, timeSkippingWorker } from '../support/time-skipping.js';

let env: TestWorkflowEnvironment;
let sandbox: TestSandbox;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
  sandbox = await startTestSandbox();
});
afterAll(async () => {
  await sandbox?.close();
  await env?.teardown();
});

/** The bound stated in docs/workflow.md: the hand-over threshold plus one loop iteration's events. */
const RUN_BOUND = MAX_EVENTS_PER_RUN + 40;

it('lives a year at the minimum poll interval in bounded runs, and completes by a signal to the current run', async () => {
  const [pdf] = await samplePdfFiles(['Lease']);
  // The production floor: nobody polls more often than once a minute.
  const worker = await timeSkippingWorker(env, sandbox, pdf!, 'long-lived', { minReconcileInterval: '1 minute' });
  const outcome = await worker.runUntil(async () => {
    const { handle } = await startEsignTransaction(
      env.client,
      leaseInput(pdf!, {
        referenceId: `year-${randomUUID()}`,
        signingDeadline: '365 days',
        reconcileInterval: '1 second', // raised to the worker's 1-minute floor
      }),
      { taskQueue: 'long-lived' },
    );
    const firstRunId = (await handle.describe()).runId;
    await env.sleep('300 days');
    const status = await handle.query(statusQuery);
    expect(status.phase).toBe('awaiting_signatures');
    expect(status.lastReconciledAt).not.toBeNull();
    // The signer signs in month ten; the webhook reaches the current run through the workflow id.
    await sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);
    await env.client.workflow.getHandle(handle.workflowId).signal(esignCompletedSignal, {
      event: 'esign-completed',
      entity: 'esign',
      data: { notificationId: randomUUID(), entity_id: status.esignId!, transaction_id: status.transactionId! },
    });
    const result = await env.client.workflow.getHandle<typeof esignTransaction>(handle.workflowId).result();

    // Follow the chain of runs from the first one and measure each history.
    const runs: number[] = [];
    let runId: string | undefined = firstRunId;
    while (runId) {
      const history: temporal.api.history.v1.IHistory = await env.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
      const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
      runs.push(events.length);
      runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    return { result, runs };
  });

  expect(outcome.result.status).toBe('completed');
  expect(outcome.result.archive?.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(outcome.runs.length).toBeGreaterThan(1); // it did continue as new
  for (const events of outcome.runs) expect(events).toBeLessThanOrEqual(RUN_BOUND);
}, 240_000);
