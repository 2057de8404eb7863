// An operator resets a transaction's run (`temporal workflow reset`, here through the same API the CLI calls) to a
// point after the provider created the transaction: the new run must follow the same provider transaction, make no
// second one, and end truthfully with a verified archive; its history must replay. The explorer cannot do this (the
// time-skipping test server has no reset): this runs on the suite's real dev server, with the real sandbox and worker.
// A reset to before the create is the one the operator must not make (docs/operations.md says why).
import { execFile } from 'node:child_process';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { esignTransaction } from '../../workflows/esign-transaction.js';
import type { WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../../src/definitions/transaction.js';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

const { EventType } = proto.temporal.api.enums.v1;

let env: EsignTestEnv;
beforeAll(async () => {
  // The sandbox's webhooks reach the workflow through the bridge, by workflow id: the reset run gets them.
  env = await startEsignTestEnv({ bridge: true });
});
afterAll(async () => {
  await env?.close();
});

/** The id of the first workflow task completed after the activity `type` completed: where an operator resets to. */
async function afterActivity(handle: WorkflowHandle, type: string): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === type,
  );
  const completed = events.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED &&
      String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
  );
  const task = events.find(
    (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && Number(e.eventId) > Number(completed?.eventId ?? Infinity),
  );
  if (!task) throw new Error(`no workflow task completed after ${type}`);
  return Number(task.eventId);
}

it('a run reset to just after its create follows the same provider transaction to a verified archive, and makes no second one', async () => {
  const input = env.input();
  const { handle } = await env.start(input);
  const before = await waitForPhase(handle, 'awaiting_signatures');
  const { runId } = await handle.describe();

  // The operator's command, as docs/operations.md gives it.
  const eventId = await afterActivity(handle, 'createTransaction');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      inject('temporalCliPath')!,
      [
        'workflow',
        'reset',
        '--workflow-id',
        handle.workflowId,
        '--event-id',
        String(eventId),
        '--reason',
        'operator: reset to after the create',
        '--address',
        inject('temporalAddress'),
        '--namespace',
        env.temporal.namespace,
        '--yes',
      ],
      { timeout: 30_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${stdout}${stderr}`)) : resolve(`${stdout}${stderr}`)),
    ),
  );
  const newRunId = (await handle.describe()).runId;
  expect(newRunId, out).not.toBe(runId);
  const latest = env.temporal.client.workflow.getHandle<typeof esignTransaction>(handle.workflowId, newRunId);

  // The new run picks up where the reset put it: the same provider transaction, still awaiting its signers.
  const after = await waitForPhase(latest, 'awaiting_signatures');
  expect(after.transactionId).toBe(before.transactionId);
  for (const p of after.participants) await env.sandbox.control.signAs(after.transactionId!, p.id);
  const result = await latest.result();
  expect(result).toMatchObject({ status: 'completed', transactionId: before.transactionId });
  expect(result.archive?.sha256).toMatch(/^[0-9a-f]{64}$/);

  const mine = (await env.sandbox.client.listTransactions({ limit: 500 })).data.filter((t) => t.referenceId === input.referenceId);
  expect(mine.map((t) => t.id)).toEqual([before.transactionId]);
  expect((await env.temporal.client.workflow.getHandle(handle.workflowId, runId).describe()).status.name).toBe('TERMINATED');
  expect((await latest.query(statusQuery)).phase).toBe('completed');

  // The reset run's history (the copied events, the reset's failed task, what followed) replays on today's code.
  await Worker.runReplayHistory({ workflowsPath }, await latest.fetchHistory(), handle.workflowId);
}, 120_000);
