import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workflowsPath } from '../../src/worker/create-worker.js';
import { issueSigningUrlUpdate, workflowIdFor } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

// The signing URL is slowed down, and two are asked at once (one with the start, one right after it): the race
// that, with two local activities outstanding at once, replayed in another order than it ran (a nondeterminism
// error on the next full replay). It was first seen between the inbox registration and a signing URL.
let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({
    wrapActivities: (activities) => ({
      ...activities,
      async createSigningUrl(input) {
        await new Promise((r) => setTimeout(r, 300));
        return activities.createSigningUrl(input);
      },
    }),
  });
});
afterAll(async () => {
  await env?.close();
});

it('issues two signing URLs asked at once one after the other, and its history replays', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  input.participants = input.participants.map((p) => ({ ...p, id: randomUUID() }));
  const ids = input.participants.map((p) => p.id!);
  // The second waits in the workflow until the transaction exists, then runs beside the first.
  const second = (async () => {
    for (;;) {
      try {
        return await env.temporal.client.workflow
          .getHandle(workflowIdFor(input.referenceId))
          .executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [ids[1]!] }] });
      } catch (err) {
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  })();
  const started = await env.start(input, { signingUrlFor: { participantIds: [ids[0]!] } });
  expect(started.signingUrl).toMatch(/^http/);
  expect((await second).url).toMatch(/^http/);
  expect(started.transactionId).toMatch(/^[0-9a-f-]{36}$/);

  for (const id of ids) await env.sandbox.control.signAs(started.transactionId!, id);
  expect((await started.handle.result()).status).toBe('completed');

  // Both ran as local activities, one after the other, and the whole history replays with the current code.
  const history = await started.handle.fetchHistory();
  const localActivities = (history.events ?? []).flatMap((e) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { activity_type: string }).activity_type] : [];
  });
  expect(localActivities.filter((a) => a === 'createSigningUrl')).toHaveLength(2);
  await Worker.runReplayHistory({ workflowsPath }, history, started.workflowId);
});
