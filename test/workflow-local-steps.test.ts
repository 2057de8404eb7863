import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workflowsPath } from '../src/worker/create-worker.js';
import { startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';

// The registration with the inbox is slowed down, so a signing URL asked with the start is ready to be
// issued while it runs: the race that, with both local activities outstanding at once, replayed in another
// order than it ran (a nondeterminism error on the next full replay).
let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({
    wrapActivities: (activities) => ({
      ...activities,
      async registerWithInbox(input) {
        await new Promise((r) => setTimeout(r, 300));
        return activities.registerWithInbox(input);
      },
    }),
  });
});
afterAll(async () => {
  await env?.close();
});

it('issues a signing URL asked with the start after the registration, and its history replays', async () => {
  const input = env.input({ reconcileInterval: '1 second' });
  input.participants = input.participants.map((p) => ({ ...p, id: randomUUID() }));
  const ids = input.participants.map((p) => p.id!);
  const started = await env.start(input, { signingUrlFor: { participantIds: [ids[0]!] } });
  expect(started.signingUrl).toMatch(/^http/);
  expect(started.transactionId).toMatch(/^[0-9a-f-]{36}$/);

  for (const id of ids) await env.sandbox.control.signAs(started.transactionId!, id);
  expect((await started.handle.result()).status).toBe('completed');

  // Both ran as local activities, one after the other, and the whole history replays with the current code.
  const history = await started.handle.fetchHistory();
  const localActivities = (history.events ?? []).flatMap((e) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { activity_type: string }).activity_type] : [];
  });
  expect(localActivities.indexOf('registerWithInbox')).toBeGreaterThanOrEqual(0);
  expect(localActivities.indexOf('createSigningUrl')).toBeGreaterThan(localActivities.indexOf('registerWithInbox'));
  await Worker.runReplayHistory({ workflowsPath }, history, started.workflowId);
});
