/**
 * The records retention (docs/records.md), started every day by a Temporal Schedule (src/client/records.ts): walks
 * the archive a page at a time and purges each archive whose retention ended and no legal hold keeps, leaving a
 * tombstone (activities/records.ts). Its clock is the workflow's, so a test can move it across years.
 */
import { continueAsNew, log, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import type { PurgeOutcome, RetentionRunInput, RetentionTotals } from '../src/definitions/records.js';
import { PROVIDER, step, UPKEEP } from './activity-options.js';
import { Clock } from './clock.js';
import { versioningBehavior } from './versioning.js';

const PAGE = 100;
const MAX_KEYS = 100;

export async function recordsRetention(input: RetentionRunInput = {}): Promise<RetentionTotals> {
  const asOf = new Clock().iso();
  const totals: RetentionTotals = input.totals ?? { checked: 0, purged: 0, held: 0, purgedKeys: [], heldKeys: [] };
  let after = input.after;
  for (;;) {
    const page = await step(PROVIDER, 'List a page of archives').listArchivesForUpkeep({
      ...(after !== undefined ? { after } : {}),
      limit: PAGE,
    });
    for (const key of page.keys) {
      // One at a time: each reads the holds register just before it destroys anything.
      const outcome = await step(UPKEEP, `Purge ${key} if its retention ended`)
        .purgeIfDue({ key, asOf })
        .catch((err: unknown): PurgeOutcome => {
          // One archive that cannot be purged now must not stop the others; the next run tries again.
          log.error('archive purge failed: kept as it was', { key, error: (err as Error).message });
          return { key, status: 'kept', detail: 'the purge failed' };
        });
      count(totals, outcome);
    }
    if (page.next === null) break;
    after = page.next;
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof recordsRetention>({ after, totals });
  }
  log.info('records retention done', { checked: totals.checked, purged: totals.purged, held: totals.held });
  return totals;
}

function count(totals: RetentionTotals, outcome: PurgeOutcome): void {
  totals.checked++;
  if (outcome.status === 'purged') {
    totals.purged++;
    if (totals.purgedKeys.length < MAX_KEYS) totals.purgedKeys.push(outcome.key);
  }
  if (outcome.status === 'held') {
    totals.held++;
    if (totals.heldKeys.length < MAX_KEYS) totals.heldKeys.push(outcome.key);
  }
}

// Auto-upgrade, as the evidence upkeep: a change to this workflow needs patched() (docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), recordsRetention);
