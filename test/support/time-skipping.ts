import { dirname } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { Workflow, WorkflowResultType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
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

/**
 * The workflow's result, or, if it has none within `ms` (time skipping
 * stalled), an error that says where it stands: its pending activities and
 * workflow task, and the last events of its history. A stall on the
 * time-skipping server then leaves something to diagnose instead of a bare
 * test timeout.
 */
export async function resultOrWhereItStalled<W extends Workflow>(handle: WorkflowHandle<W>, ms = 45_000): Promise<WorkflowResultType<W>> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void (async () => {
        let unreadable = '';
        const raw = await handle.describe().then(
          (d) => d.raw,
          (err: unknown) => ((unreadable = ` (describe failed: ${String(err)})`), null),
        );
        const history = await handle.fetchHistory().catch(() => null);
        const events = (history?.events ?? []).slice(-25).map((e) => EVENT_NAMES[e.eventType as number] ?? String(e.eventType));
        reject(
          new Error(
            `no result after ${ms} ms of real time${unreadable}: pending activities ${JSON.stringify(
              raw?.pendingActivities?.map((a) => ({ type: a.activityType?.name, state: a.state, attempt: a.attempt })) ?? [],
            )}, pending workflow task ${JSON.stringify(raw?.pendingWorkflowTask ?? null)}, last events ${events.join(' ')}`,
          ),
        );
      })();
    }, ms);
  });
  try {
    return await Promise.race([handle.result(), stalled]);
  } finally {
    clearTimeout(timer);
  }
}

const EVENT_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(temporal.api.enums.v1.EventType)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v as number, k.replace('EVENT_TYPE_', '')]),
);
