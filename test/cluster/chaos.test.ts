// The chaos run on the production topology: the same drivers and checks as
// test/explorer/chaos.test.ts, with the faults only a cluster has (each Temporal
// service SIGKILLed and restarted, PostgreSQL crashed and recovered) besides
// killed workers, each of the two bridges behind the load balancer killed,
// the workers rolled out to a new version, and a bulk-send batch signed
// through it all.
import { expect, it } from 'vitest';
import { formatReport } from '../../chaos/report.js';
import { defaultFaults, runChaos } from '../../chaos/run-chaos.js';
import { expectBatch, expectRollingDeploy } from '../support/chaos.js';

it('ends every transaction in the one outcome the provider agrees with, archiving each completed one once, through killed Temporal services and a PostgreSQL crash', async () => {
  const lines: string[] = [];
  const report = await runChaos({
    seed: 7,
    transactions: 20,
    concurrency: 5,
    faults: defaultFaults(7),
    cluster: true,
    batchRows: 10,
    timeoutMs: 5 * 60_000,
    log: (l) => lines.push(l),
  });
  const context = `${formatReport(report, 'test/cluster/chaos.test.ts')}\n${lines.join('\n')}`;
  expect(report.problems, context).toEqual([]);
  expect(report.topology).toBe('cluster');
  const kinds = report.events.map((e) => e.description);
  for (const broken of ['Temporal history', 'Temporal matching', 'Temporal frontend', 'PostgreSQL', 'bridge 1', 'bridge 2']) {
    expect(
      kinds.some((d) => d.includes(broken)),
      `${broken} was broken`,
    ).toBe(true);
  }
  expect(report.completed).toBeGreaterThan(0);
  expect(report.archives).toBe(report.completed);
  expect(report.providerTransactions).toBe(20 + 10);
  expectRollingDeploy(report, context);
  expectBatch(report, 10, context);
}, 600_000);
