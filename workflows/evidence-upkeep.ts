/**
 * The evidence upkeep, started every day by a Temporal Schedule (src/client/evidence-upkeep.ts): walks the
 * archive a page at a time and renews the long-term evidence each archive needs (activities/evidence-upkeep.ts).
 * Its clock is the workflow's, so a test can move it across years. A long archive continues as new.
 */
import { continueAsNew, log, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import type {
  ArchiveUpkeepOutcome,
  EvidenceUpkeepInput,
  EvidenceUpkeepResult,
  EvidenceUpkeepTotals,
} from '../src/definitions/evidence-upkeep.js';
import { PROVIDER, step, UPKEEP } from './activity-options.js';
import { Clock } from './clock.js';
import { versioningBehavior } from './versioning.js';

const PAGE = 100;
/** Archives renewed at once: each holds a worker slot while it time-stamps and verifies. */
const PARALLEL = 4;
/** Keys of archives that need an operator, kept in the result. */
const MAX_KEYS = 100;

export async function evidenceUpkeep(input: EvidenceUpkeepInput = {}): Promise<EvidenceUpkeepResult> {
  const asOf = new Date(new Clock().now()).toISOString();
  const totals: EvidenceUpkeepTotals = input.totals ?? {
    checked: 0,
    renewed: 0,
    lapsed: 0,
    skipped: 0,
    lapsedKeys: [],
    refused: 0,
    refusedKeys: [],
  };
  let after = input.after;
  for (;;) {
    const page = await step(PROVIDER, 'List a page of archives').listArchivesForUpkeep({
      ...(after !== undefined ? { after } : {}),
      limit: PAGE,
    });
    for (let i = 0; i < page.keys.length; i += PARALLEL) {
      const outcomes = await Promise.all(
        page.keys.slice(i, i + PARALLEL).map((key) =>
          step(UPKEEP, `Renew the evidence of ${key} if due`)
            .renewArchiveEvidence({ key, asOf })
            .catch((err: unknown): ArchiveUpkeepOutcome => {
              // One archive that cannot be renewed (a copy that changed, attempts spent) must not stop the others.
              log.error('archive evidence upkeep failed: kept as it was', { key, error: (err as Error).message });
              return { key, status: 'refused', documents: [] };
            }),
        ),
      );
      outcomes.forEach((o) => count(totals, o));
    }
    if (page.next === null) break;
    after = page.next;
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof evidenceUpkeep>({ after, totals });
  }
  log.info('evidence upkeep done', { ...totals, lapsedKeys: totals.lapsedKeys.length, refusedKeys: totals.refusedKeys.length });
  return totals;
}

function count(totals: EvidenceUpkeepTotals, outcome: ArchiveUpkeepOutcome): void {
  totals.checked++;
  if (outcome.status === 'renewed') totals.renewed++;
  if (outcome.status === 'skipped') totals.skipped++;
  if (outcome.status === 'lapsed') {
    totals.lapsed++;
    if (totals.lapsedKeys.length < MAX_KEYS) totals.lapsedKeys.push(outcome.key);
  }
  if (outcome.status === 'refused') {
    totals.refused++;
    if (totals.refusedKeys.length < MAX_KEYS) totals.refusedKeys.push(outcome.key);
  }
}

// Auto-upgrade: under Worker Versioning a run moves to the deployment's current version at its next task, so a
// change to this workflow still needs patched() (docs/operations.md).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), evidenceUpkeep);
