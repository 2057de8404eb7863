import { dirname } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LocalArchiveStore } from '../src/archive/store.js';
import { startEsignTransaction } from '../src/client/transactions.js';
import { createEsignWorker } from '../src/worker/create-worker.js';
import { statusQuery } from '../workflows/definitions.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from './support/sandbox.js';
import { createTimeSkippingEnv } from './support/temporal.js';

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
  const worker = await createEsignWorker({
    connection: env.nativeConnection,
    taskQueue: 'deadline',
    deps: {
      minReconcileInterval: '1 second',
      client: sandbox.client,
      archive: new LocalArchiveStore(`${dirname(pdf!)}/archive`),
      documentRoots: [dirname(pdf!)],
    },
  });
  const result = await worker.runUntil(async () => {
    const { handle } = await startEsignTransaction(
      env.client,
      {
        referenceId: 'deadline-1',
        documents: [
          {
            title: 'Lease',
            source: { path: pdf! },
            tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
          },
        ],
        participants: [
          { email: 'tenant@example.com', firstName: 'Tia', lastName: 'Tenant', authenticationType: 'none', twoFactorContact: 'email' },
        ],
        signingDeadline: '14 days',
        reconcileInterval: '1 day',
      },
      { taskQueue: 'deadline' },
    );
    const started = Date.now();
    const outcome = await handle.result();
    const status = await handle.query(statusQuery);
    return { outcome, status, workflowDays: (Date.parse(status.lastReconciledAt!) - started) / 86_400_000 };
  });
  expect(result.outcome).toMatchObject({ status: 'expired', reason: 'signing deadline passed', referenceId: 'deadline-1' });
  expect(result.outcome.transactionId).toMatch(/^[0-9a-f-]{36}$/);
  // The provider was polled on the way (a lost webhook would have been found), the last time near the deadline.
  expect(result.status.providerStatus).toBe('draft'); // withdrawn before it ended
  expect(result.workflowDays).toBeGreaterThan(12);
});
