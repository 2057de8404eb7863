import { dirname } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { ActivityDeps } from '../../activities/index.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { sandboxEvidencePolicy, type TestSandbox } from './sandbox.js';

/** A worker on the time-skipping server, signing documents under `pdf`'s folder with the sandbox. */
export function timeSkippingWorker(
  env: TestWorkflowEnvironment,
  sandbox: TestSandbox,
  pdf: string,
  taskQueue: string,
  deps: Partial<ActivityDeps> = {},
): Promise<Worker> {
  return createEsignWorker({
    connection: env.nativeConnection,
    taskQueue,
    deps: {
      minReconcileInterval: '1 second',
      client: sandbox.client,
      archive: new LocalArchiveStore(`${dirname(pdf)}/archive`),
      documentRoots: [dirname(pdf)],
      evidence: sandboxEvidencePolicy(sandbox),
      ...deps,
    },
  });
}

const tenant = {
  email: 'tenant@example.com',
  firstName: 'Tia',
  lastName: 'Tenant',
  authenticationType: 'none',
  twoFactorContact: 'email',
} as const;

/** A one-page lease for Tia Tenant (a signature tag per participant given), for the long-timer tests. */
export function leaseInput(pdf: string, overrides: Partial<EsignTransactionInput> & { referenceId: string }): EsignTransactionInput {
  const participants = overrides.participants ?? [tenant];
  return {
    documents: [
      {
        title: 'Lease',
        source: { path: pdf },
        tags: participants.map((_, i) => ({
          type: 'SIGNATURETEMPLATE' as const,
          x: 72 + 250 * i,
          y: 120,
          width: 200,
          height: 30,
          page: 0,
          signerIndex: i,
        })),
      },
    ],
    participants,
    ...overrides,
  };
}
