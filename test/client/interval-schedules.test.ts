// The Schedules the worker keeps (the evidence upkeep, the records retention's purge), through the one helper both
// use, on the suite's dev server: created as the worker's configuration says, and brought to a new configuration on
// a later start without losing an operator's pause. What they start is run in test/evidence/evidence-upkeep-schedule.test.ts.
import { ScheduleOverlapPolicy, type ScheduleDescription } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureEvidenceUpkeepSchedule } from '../../src/client/evidence-upkeep.js';
import { ensureRecordsRetentionSchedule } from '../../src/client/records.js';
import { EVIDENCE_UPKEEP_WORKFLOW_TYPE } from '../../src/definitions/evidence-upkeep.js';
import { RECORDS_RETENTION_WORKFLOW_TYPE } from '../../src/definitions/records.js';
import { connectToTestServer, uniqueTaskQueue, type TemporalTestContext } from '../support/temporal.js';

let ctx: TemporalTestContext;
beforeAll(async () => {
  ctx = await connectToTestServer();
});
afterAll(async () => {
  await ctx?.close();
});

describe.each([
  ['the evidence upkeep', ensureEvidenceUpkeepSchedule, EVIDENCE_UPKEEP_WORKFLOW_TYPE, /PAdES B-LTA.*docs\/evidence\.md/],
  ['the records retention', ensureRecordsRetentionSchedule, RECORDS_RETENTION_WORKFLOW_TYPE, /legal hold.*docs\/records\.md/],
] as const)('the Schedule of %s', (_name, ensure, workflowType, purpose) => {
  it('is created as configured, and a later start brings it to its new configuration, keeping a pause', async () => {
    const taskQueue = uniqueTaskQueue('schedule');
    // Not the namespace's own id: tests share the server.
    const scheduleId = `schedule-${taskQueue}`;
    const schedule = ctx.client.schedule.getHandle(scheduleId);
    try {
      expect(await ensure(ctx.client, { taskQueue, every: '1 day', scheduleId })).toBe('created');
      const created = await schedule.describe();
      expect(created.action).toMatchObject({ type: 'startWorkflow', workflowType, workflowId: scheduleId, taskQueue, args: [{}] });
      expect(created.spec.intervals?.map((i) => i.every)).toEqual([24 * 3600 * 1000]);
      expect(created.policies).toMatchObject({ overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: 24 * 3600 * 1000 });
      expect(memoPurpose(created)).toMatch(purpose);

      await schedule.pause('operator: archive migration');
      const moved = uniqueTaskQueue('schedule-moved');
      expect(await ensure(ctx.client, { taskQueue: moved, every: '12 hours', scheduleId })).toBe('updated');
      const updated = await schedule.describe();
      expect(updated.state.paused).toBe(true);
      expect(updated.spec.intervals?.[0]?.every).toBe(12 * 3600 * 1000);
      expect(updated.action).toMatchObject({ workflowType, workflowId: scheduleId, taskQueue: moved });
    } finally {
      await schedule.delete().catch(() => undefined);
    }
  });
});

function memoPurpose(description: ScheduleDescription): unknown {
  return (description.memo as { purpose?: unknown } | undefined)?.purpose;
}
