/**
 * Records retention and legal holds for clients, the CLI and the worker (docs/records.md): the holds register
 * (`esign-legal-holds`, started by its first hold) and the Schedule that starts the daily purge.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  holdsQuery,
  LEGAL_HOLDS_WORKFLOW_ID,
  LEGAL_HOLDS_WORKFLOW_TYPE,
  placeHoldUpdate,
  RECORDS_RETENTION_SCHEDULE_ID,
  RECORDS_RETENTION_WORKFLOW_ID,
  RECORDS_RETENTION_WORKFLOW_TYPE,
  releaseHoldUpdate,
  type HoldRequest,
  type LegalHold,
  type LegalHoldsWorkflow,
  type RecordsRetentionWorkflow,
  type ReleaseRequest,
} from '../definitions/records.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import { ensureIntervalSchedule } from './schedules.js';

/** Places a legal hold: no archive it covers is purged (nor, later, erased) until it is released. Answers the hold. */
export async function placeLegalHold(client: Client, request: HoldRequest, options: { taskQueue?: string } = {}): Promise<LegalHold> {
  return client.workflow.executeUpdateWithStart(placeHoldUpdate, {
    args: [request],
    startWorkflowOperation: new WithStartWorkflowOperation<LegalHoldsWorkflow>(LEGAL_HOLDS_WORKFLOW_TYPE, {
      workflowId: LEGAL_HOLDS_WORKFLOW_ID,
      taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
      // The register is one for the namespace: a hold goes to the one running.
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [],
    }),
  });
}

/** Releases a standing hold, saying who and why (kept with the hold). */
export async function releaseLegalHold(client: Client, request: ReleaseRequest): Promise<LegalHold> {
  return client.workflow.getHandle(LEGAL_HOLDS_WORKFLOW_ID).executeUpdate(releaseHoldUpdate, { args: [request] });
}

/** Every hold, standing and released, oldest first; none before the first hold was placed. */
export async function listLegalHolds(client: Client): Promise<LegalHold[]> {
  try {
    return await client.workflow.getHandle(LEGAL_HOLDS_WORKFLOW_ID).query(holdsQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return [];
    throw err;
  }
}

export interface RetentionScheduleOptions {
  taskQueue: string;
  /** How often the archive is walked for what is due (a duration such as '1 day'). */
  every: string;
  scheduleId?: string;
}

/**
 * Creates the Schedule that starts the records retention's purge, or brings an existing one to `options` without
 * touching its state: an operator's pause survives a worker restart. One run at a time; a worker that was down
 * catches up once.
 */
export async function ensureRecordsRetentionSchedule(client: Client, options: RetentionScheduleOptions): Promise<'created' | 'updated'> {
  const scheduleId = options.scheduleId ?? RECORDS_RETENTION_SCHEDULE_ID;
  return ensureIntervalSchedule<RecordsRetentionWorkflow>(client, {
    scheduleId,
    workflowType: RECORDS_RETENTION_WORKFLOW_TYPE,
    workflowId: scheduleId === RECORDS_RETENTION_SCHEDULE_ID ? RECORDS_RETENTION_WORKFLOW_ID : scheduleId,
    taskQueue: options.taskQueue,
    args: [{}],
    every: options.every,
    purpose: 'purges archives whose retention ended, unless a legal hold keeps them; docs/records.md',
  });
}
