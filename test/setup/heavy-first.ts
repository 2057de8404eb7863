import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take minutes, longest first (as measured in a run of `npm test` on a 2-core machine: the explorer
 * about 310 s, the bench smoke 190 s, bulk send 150 s, chaos 130 s, the event log 90 s, then a minute or less each).
 * Vitest starts the longest files first when it remembers their durations, but a clean clone (CI) has no such memory
 * and starts the largest files first: a short file with a long run, started last, kept one worker busy for minutes
 * after the other had finished. Files not listed follow in Vitest's own order.
 */
const HEAVY = [
  'explorer',
  'bench-smoke',
  'bulk-send',
  'chaos',
  'event-log',
  'evidence-corpus',
  'explorer-regressions',
  'late-completion',
  'evidence',
  'cli',
  'client-package',
  'cli-templates',
  'worker-versioning',
  'bulk-cli',
  'workflow-long-lived',
  'openapi-contract',
  'compiled-worker',
];

const rank = (spec: TestSpecification): number => {
  const name = /([^/]+)\.test\.ts$/.exec(spec.moduleId)?.[1] ?? '';
  const at = HEAVY.indexOf(name);
  return at === -1 ? HEAVY.length : at;
};

export class HeavyFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map((x) => x.spec);
  }
}
