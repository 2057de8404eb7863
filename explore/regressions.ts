/**
 * Schedules that once failed, kept as regression tests (explore/regressions/*.json, replayed by
 * test/explorer/explorer-regressions.test.ts): each names the defect it showed, so a failure says what came back.
 */
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createExplorerActivities } from './activities.js';
import type { CheckName } from './checks.js';
import { ProviderModel } from './provider-model.js';
import type { Schedule } from './schedule.js';

export interface Regression {
  /** The file's name without `.json`. */
  name: string;
  /** The defect the schedule showed, in a sentence. */
  defect: string;
  /** What the explorer reported when it found it. */
  found?: string;
  /**
   * A defect found and not fixed yet: the schedule still fails `check` (test/explorer/explorer-regressions.test.ts asserts it
   * does, so a fix shows as a failure there, to remove this). With `after`, a seed that fails `check` after that move
   * (a coverage key of explore/explore.ts, `terminate eventLog`, say) is reported as this known defect rather than as
   * a new finding; without, every seed that shows it again fails as any other.
   */
  open?: { check: CheckName; after?: string };
  /**
   * Counters of the run's coverage (explore/explore.ts `Coverage`: `lostQueries`, say) that one of its runs must reach,
   * so that a schedule kept for a path still takes it (timing can move a race off it).
   */
  reaches?: string[];
  schedule: Schedule;
}

export const REGRESSIONS_DIR = fileURLToPath(new URL('./regressions/', import.meta.url));

/** The defects found and not fixed yet. */
export async function openDefects(dir = REGRESSIONS_DIR): Promise<Regression[]> {
  return (await loadRegressions(dir)).filter((r) => r.open);
}

export async function loadRegressions(dir = REGRESSIONS_DIR): Promise<Regression[]> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(
    files.map(async (file) => {
      const parsed = JSON.parse(await readFile(`${dir}${file}`, 'utf8')) as Partial<Regression>;
      return { name: file.replace(/\.json$/, ''), defect: parsed.defect ?? '(not stated)', ...parsed, schedule: scheduleOf(parsed) };
    }),
  );
}

/** A schedule from a file: a bare schedule, or a regression that holds one. */
export function scheduleOf(value: unknown): Schedule {
  const candidate = (value as { schedule?: unknown })?.schedule ?? value;
  const s = candidate as Partial<Schedule>;
  if (
    typeof s?.seed !== 'number' ||
    typeof s.setup !== 'object' ||
    !Array.isArray(s.steps) ||
    !Array.isArray(s.faults) ||
    !Array.isArray(s.late)
  ) {
    throw new Error('not a schedule: expected {seed, setup, steps, faults, late} (or a regression with one under "schedule")');
  }
  // A fault on an activity no workflow calls any more would never fire: the regression would pass without its fault.
  const activities = new Set(Object.keys(createExplorerActivities({ model: new ProviderModel({ uuid: () => '' }) })));
  const unknown = (s.faults as { activity?: unknown }[]).find((f) => typeof f.activity !== 'string' || !activities.has(f.activity));
  if (unknown) throw new Error(`not a schedule: a fault on ${String(unknown.activity)}, which is not an activity of the workflows`);
  return s as Schedule;
}
