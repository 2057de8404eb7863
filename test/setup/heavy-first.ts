import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take a minute or more, longest first (as measured on a 2-core machine, three files at once: the
 * explorer about 300 s, the bench smoke 190 s, the explorer's regressions 150 s, bulk send 140 s, chaos 130 s, the
 * provider's refusals and the CLI about a minute), then those of half a minute. Vitest starts the longest
 * files first when it remembers their durations, but a clean clone (CI) has no such memory and starts the largest
 * files first: a short file with a long run, started last, kept one worker busy for minutes after the other had
 * finished. Files not listed follow in Vitest's own order.
 */
const HEAVY = [
  'explorer',
  'bench-smoke',
  'explorer-regressions',
  'bulk-send',
  'chaos',
  'evidence-corpus',
  'provider-refusals',
  'event-log',
  'evidence',
  'cli',
  'cli-templates',
  'client-package',
  'operations',
  'openapi-contract',
  'workflow-long-lived',
  'cli-records',
  'bulk-cli',
  'embedded-messages',
  'stuck-run',
  'workflow-crash',
  'codec-interop',
  'late-completion',
  'compiled-worker',
  'worker-versioning',
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
