// The small chaos run of `npm run chaos`: 30 transactions through the whole
// system (own Temporal dev server, sandbox with faults, bridge, two versioned
// workers) while workers are SIGKILLed, the bridge is killed, Temporal
// restarts and the workers are rolled out to a new version; most are signed,
// the rest decline, are ended by the provider or race their deadline. A
// bulk-send batch of 10 rows, submitted twice part-way through, is signed
// through it all.
import { expect, it } from 'vitest';
import { formatReport } from '../../chaos/report.js';
import { defaultFaults, runChaos } from '../../chaos/run-chaos.js';
import { expectBatch, expectRollingDeploy } from '../support/chaos.js';

it('ends every transaction in the one outcome the provider agrees with, archiving each completed one once, whatever is killed on the way', async () => {
  const lines: string[] = [];
  // A denser mix than the default: 30 transactions make few enough API calls that a 2 % fault could go unseen.
  const faults = { ...defaultFaults(1), resetRate: 0.04, lostResponseRate: 0.04, rateLimitRate: 0.05 };
  const rows = 10;
  const report = await runChaos({
    seed: 1,
    transactions: 30,
    concurrency: 5,
    batchRows: rows,
    faults,
    timeoutMs: 4 * 60_000,
    log: (l) => lines.push(l),
  });

  const context = `${formatReport(report, 'test/explorer/chaos.test.ts')}\n${lines.join('\n')}`;
  expect(report.problems, context).toEqual([]);
  // 21 signed, 3 declined, 3 ended by the provider (one each way), 3 racing their deadline (completed or expired);
  // and the batch's rows, all signed.
  expect(report.outcomes).toMatchObject({ declined: 3, cancelled: 1, deleted: 1 });
  expect(report.completed).toBeGreaterThanOrEqual(21 + rows);
  expect((report.outcomes.completed ?? 0) + (report.outcomes.expired ?? 0)).toBe(21 + 3 + 1 + rows);
  expect(report.archives).toBe(report.completed);
  expect(report.providerTransactions).toBe(30 + rows);
  expectBatch(report, rows, context);
  // Every acknowledged webhook is a signal in Temporal, but events other than a completion that came after their
  // workflow ended: those are acknowledged as stale (the checks make sure of both, or report a problem).
  expect(report.webhooks.ackedAndFoundInTemporal + report.webhooks.ackedStale).toBe(report.webhooks.delivered);
  expect(report.webhooks.ackedAndFoundInTemporal).toBeGreaterThan(0);

  // The chaos did happen: every kind of event, and faults of every API kind.
  const kinds = report.events.map((e) => e.description.split(',')[0]!);
  expect(kinds).toContain('stop the Temporal dev server');
  expect(kinds.filter((k) => k.startsWith('SIGKILL worker')).length).toBeGreaterThanOrEqual(4);
  expect(kinds).toContain('SIGKILL the bridge');
  expectRollingDeploy(report, context);
  expect(report.injected['5xx']).toBeGreaterThan(0);
  expect(report.injected.reset).toBeGreaterThan(0);
  expect(report.injected.lostResponse).toBeGreaterThan(0);
  expect(report.injected['429']).toBeGreaterThan(0);
}, 360_000);
