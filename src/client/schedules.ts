/**
 * The Temporal Schedules the worker keeps (the evidence upkeep, the records retention's purge): each starts one
 * workflow at an interval, and each worker start brings it to the worker's configuration.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptionsStartWorkflowAction,
  type Workflow,
} from '@temporalio/client';

export interface IntervalScheduleOptions<W extends Workflow> {
  scheduleId: string;
  workflowType: string;
  /** The id of each run it starts: one id, so a run still going is never joined by a second. */
  workflowId: string;
  taskQueue: string;
  args: Parameters<W>;
  /** How often (a duration such as '1 day'). */
  every: string;
  /** What it is for, in its memo: an operator who finds it in the Web UI reads it there. */
  purpose: string;
}

/**
 * Creates the Schedule, or brings an existing one to `options` (interval and what it starts) without touching its
 * state: an operator's pause survives a worker restart. One run at a time (a long run skips the next start rather
 * than racing it); a worker that was down catches up once.
 */
export async function ensureIntervalSchedule<W extends Workflow>(
  client: Client,
  options: IntervalScheduleOptions<W>,
): Promise<'created' | 'updated'> {
  // Checked against W where the caller names it (`args`); the SDK's conditional type cannot follow a generic W here.
  const action = {
    type: 'startWorkflow',
    workflowType: options.workflowType,
    workflowId: options.workflowId,
    taskQueue: options.taskQueue,
    args: options.args,
  } as ScheduleOptionsStartWorkflowAction<W>;
  const spec = { intervals: [{ every: options.every as `${number} ${string}` }] };
  try {
    await client.schedule.create({
      scheduleId: options.scheduleId,
      spec,
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' },
      memo: { purpose: options.purpose },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(options.scheduleId).update((previous) => ({ ...previous, spec, action }));
  return 'updated';
}
