import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { leaseInput, resultOrWhereItStalled, timeSkippingWorker } from '../support/time-skipping.js';

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

it('ends as expired at a deadline of days, polling the provider daily meanwhile', async () => {
  const [pdf] = await samplePdfFiles(['Lease']);
  const worker = await timeSkippingWorker(env, sandbox, pdf!, 'deadline');
  const result = await worker.runUntil(async () => {
    const { handle } = await startEsignTransaction(
      env.client,
      leaseInput(pdf!, {
        referenceId: 'deadline-1',
        signingDeadline: '14 days',
        reconcileInterval: '1 day',
      }),
      { taskQueue: 'deadline' },
    );
    const started = Date.now();
    const outcome = await resultOrWhereItStalled(handle);
    const status = await handle.query(statusQuery);
    return { outcome, status, workflowDays: (Date.parse(status.lastReconciledAt!) - started) / 86_400_000 };
  });
  expect(result.outcome).toMatchObject({ status: 'expired', reason: 'signing deadline passed', referenceId: 'deadline-1' });
  expect(result.outcome.transactionId).toMatch(/^[0-9a-f-]{36}$/);
  // The provider was polled on the way (a lost webhook would have been found), the last time near the deadline.
  expect(result.status.providerStatus).toBe('draft'); // withdrawn before it ended
  expect(result.workflowDays).toBeGreaterThan(12);
});
