import { defineConfig } from 'vitest/config';

// `npm run test:cluster`: the production topology (PostgreSQL and the Temporal
// server's services as separate processes) under load and faults. Apart from
// `npm test` because its first run builds the Temporal server (a few minutes).
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    // The workflows bundled once for every worker the files start (test/cluster/bundle-setup.ts).
    globalSetup: ['test/cluster/bundle-setup.ts'],
    setupFiles: ['test/setup/quiet-runtime.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    reporters: ['default'],
  },
});
