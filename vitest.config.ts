import { defineConfig } from 'vitest/config';
import { HeavyFirstSequencer } from './test/setup/heavy-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The production topology's tests run apart: `npm run test:cluster` (vitest.cluster.config.ts).
    exclude: ['test/cluster/**', '**/node_modules/**'],
    globalSetup: ['test/setup/temporal-server.ts'],
    setupFiles: ['test/setup/quiet-runtime.ts'],
    // Workers, servers and browsers are real: give them time, and keep the
    // 2-core CI machine from running too many heavy files at once.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // The files that take minutes start first, also in a clean clone that has no record of durations.
    sequence: { sequencer: HeavyFirstSequencer },
    reporters: ['default'],
  },
});
