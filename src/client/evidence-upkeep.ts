import type { Client } from '@temporalio/client';
import {
  EVIDENCE_UPKEEP_SCHEDULE_ID,
  EVIDENCE_UPKEEP_WORKFLOW_ID,
  EVIDENCE_UPKEEP_WORKFLOW_TYPE,
  type EvidenceUpkeepWorkflow,
} from '../definitions/evidence-upkeep.js';
import { ensureIntervalSchedule } from './schedules.js';

export interface UpkeepScheduleOptions {
  taskQueue: string;
  /** How often the archive is walked (a duration such as '1 day'). */
  every: string;
  /** The default names the one upkeep of a namespace; another id is for tests that share a server. */
  scheduleId?: string;
}

/**
 * Creates the Temporal Schedule that starts the evidence upkeep, or brings an existing one to `options`
 * (interval, task queue) without touching its state: an operator's pause survives a worker restart. One upkeep
 * at a time (a long walk skips the next start rather than racing it); a worker that was down catches up once.
 */
export async function ensureEvidenceUpkeepSchedule(client: Client, options: UpkeepScheduleOptions): Promise<'created' | 'updated'> {
  const scheduleId = options.scheduleId ?? EVIDENCE_UPKEEP_SCHEDULE_ID;
  return ensureIntervalSchedule<EvidenceUpkeepWorkflow>(client, {
    scheduleId,
    workflowType: EVIDENCE_UPKEEP_WORKFLOW_TYPE,
    workflowId: scheduleId === EVIDENCE_UPKEEP_SCHEDULE_ID ? EVIDENCE_UPKEEP_WORKFLOW_ID : scheduleId,
    taskQueue: options.taskQueue,
    args: [{}],
    every: options.every,
    purpose: 'renews the long-term evidence (PAdES B-LTA) of archived documents; docs/evidence.md',
  });
}
