// A deadline correction arriving while the run's history is already at its limit: the loop spins on `rescheduled`.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { correctTransactionUpdate, esignEventSignal } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv();
}, 60_000);
afterAll(async () => {
  await env?.close();
});

it('deadline correction when history is full', async () => {
  const input = env.input({ maxHistoryEvents: 100 });
  const { handle } = await env.start(input);
  await waitForPhase(handle, 'awaiting_signatures');
  // Invalid notifications: counted as rejected, they grow the history without waking the loop.
  for (let i = 0; i < 60; i++) {
    await handle.signal(esignEventSignal, 'garbage' as never);
    const d = await handle.describe();
    if (d.historyLength >= 104) break;
  }
  const before = await handle.describe();
  console.log('history before', before.historyLength, before.runId);
  const update = handle
    .executeUpdate(correctTransactionUpdate, {
      args: [{ kind: 'deadline', by: 'ops', deadline: new Date(Date.now() + 3_600_000).toISOString() }],
    })
    .then(
      (r) => ({ ok: r }),
      (e: unknown) => ({ err: String(e) }),
    );
  const outcome = await Promise.race([update, new Promise((r) => setTimeout(() => r('timeout'), 12_000))]);
  console.log('update outcome', JSON.stringify(outcome));
  const desc = await handle.describe();
  console.log('after', desc.status.name, desc.historyLength, desc.runId, JSON.stringify((desc.raw as any).pendingWorkflowTask ?? null));
  const hist = await handle.fetchHistory();
  const failed = (hist.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
  console.log('WFT failed events', failed.length, JSON.stringify(failed.map((e) => e.workflowTaskFailedEventAttributes?.failure?.message)));
  await handle.terminate('attack test done').catch(() => undefined);
  expect(outcome).not.toBe('timeout');
}, 60_000);
