import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take minutes, longest first (as measured in a run of `npm test` on a 2-core machine: the bench
 * smoke about 270 s, bulk send 210 s, the explorer 210 s, chaos 135 s, then about a minute each). Vitest starts the
 * longest files first when it remembers their durations, but a clean clone (CI) has no such memory and starts the
 * largest files first: a short file with a long run, started last, kept one worker busy for minutes after the other
 * had finished. Files not listed follow in Vitest's own order.
 */
const HEAVY = [
  'bench-smoke',
  'bulk-send',
  'explorer',
  'chaos',
  'explorer-regressions',
  'openapi-contract',
  'event-log',
  'cli',
  'evidence',
  'workflow-long-lived',
  'worker-versioning',
  'cli-templates',
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
