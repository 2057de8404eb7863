// The small chaos run of `npm run chaos`: 30 transactions through the whole
// system (own Temporal dev server, sandbox with faults, bridge, two workers)
// while workers are SIGKILLed, the bridge is killed and Temporal restarts.
import { expect, it } from 'vitest';
import { runChaos } from '../chaos/run-chaos.js';

it('completes every transaction with exactly one verified archive, whatever is killed on the way', async () => {
  const lines: string[] = [];
  const report = await runChaos({ seed: 1, transactions: 30, concurrency: 15, timeoutMs: 4 * 60_000, log: (l) => lines.push(l) });

  expect(report.problems, lines.join('\n')).toEqual([]);
  expect(report.completed).toBe(30);
  expect(report.archives).toBe(30);
  expect(report.providerTransactions).toBe(30);
  expect(report.webhooks.ackedAndFoundInTemporal).toBe(report.webhooks.delivered);

  // The chaos did happen: every kind of event, and faults of every API kind.
  const kinds = report.events.map((e) => e.description.split(',')[0]!);
  expect(kinds).toContain('stop the Temporal dev server');
  expect(kinds.filter((k) => k.startsWith('SIGKILL worker')).length).toBeGreaterThanOrEqual(4);
  expect(kinds).toContain('SIGKILL the bridge');
  expect(report.injected['5xx']).toBeGreaterThan(0);
  expect(report.injected.reset).toBeGreaterThan(0);
  expect(report.injected.lostResponse).toBeGreaterThan(0);
  expect(report.injected['429']).toBeGreaterThan(0);
}, 360_000);
