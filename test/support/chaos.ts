// What both chaos tests ask of the rolling deploy in the middle of their run (chaos/workers.ts).
import { expect } from 'vitest';
import type { ChaosReport } from '../../chaos/run-chaos.js';

/** `context`: what a failure prints (the report and the run's log). */
export function expectRollingDeploy(report: ChaosReport, context: string): void {
  const { deploy, versions } = report;
  expect(report.events.filter((e) => e.description.startsWith('rolling deploy')).length, context).toBe(1);
  expect(deploy.failure, context).toBeUndefined();
  // It came once some transactions had started and before all had.
  expect(deploy.startedBefore, context).toBeGreaterThan(0);
  expect(deploy.startedBefore, context).toBeLessThan(report.transactions);
  // Both versions carried transactions: some ran on v1 (staying there or moving at a continue-as-new), some only on v2.
  expect(versions!.transactions.onOld + versions!.transactions.moved, context).toBeGreaterThan(0);
  expect(versions!.transactions.onNew, context).toBeGreaterThan(0);
  // v1 drained, then its workers were stopped.
  expect(deploy.drainedAt, context).toBeGreaterThanOrEqual(deploy.currentAt!);
  expect(deploy.stoppingAt, context).toBeGreaterThanOrEqual(deploy.drainedAt!);
  expect(deploy.stoppedAt, context).toBeGreaterThanOrEqual(deploy.stoppingAt!);
}

/** The bulk-send batch ran once, part-way through, and every one of its `rows` rows completed exactly once. */
export function expectBatch(report: ChaosReport, rows: number, context: string): void {
  const { batch } = report;
  expect(report.events.filter((e) => e.description.startsWith('bulk send')).length, context).toBe(1);
  expect(batch, context).toMatchObject({ rows, phase: 'done', completed: rows, archived: rows, duplicates: 0 });
  expect(batch!.submittedAfter, context).toBeGreaterThan(0);
  expect(batch!.submittedAfter, context).toBeLessThan(report.transactions);
  expect(batch!.runs, context).toBe(batch!.versions.length);
}
