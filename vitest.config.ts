import { defineConfig } from 'vitest/config';
import { isClosedChannelRetry } from './explore/closed-channel.js';
import { HeavyFirstSequencer } from './test/setup/heavy-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The production topology's tests run apart: `npm run test:cluster` (vitest.cluster.config.ts).
    exclude: ['test/cluster/**', '**/node_modules/**'],
    globalSetup: ['test/setup/temporal-server.ts'],
    setupFiles: ['test/setup/quiet-runtime.ts'],
    // Workers, servers and browsers are real: give them time.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Three files at once on the 2-core CI machine: much of a file's time is spent waiting on timers and round trips.
    // Measured in full runs on such a machine: 887 s with two, 755 s with three, the CPU then busy all the time.
    maxWorkers: 3,
    // Each test process runs file after file with its modules loaded once: a process per file spent over a fifth of
    // the suite's wall time (and of CI's 20 minutes) starting and importing the same SDK, pkijs and fastify again.
    // Files leave nothing behind that a later one reads: what they set process-wide (environment variables, a fake
    // clock, OpenTelemetry's globals) they put back in their afterAll, and the explorer closes even the lanes it
    // abandoned. The Temporal runtime is process-wide anyway: test/setup/quiet-runtime.ts gives it its logger once.
    isolate: false,
    // The one error a finished file can leave to the next (explore/closed-channel.ts): a closed Temporal connection's
    // retry timer firing into the closed channel. A process per file never saw it, exiting first; it says nothing about
    // the file that happens to be running, so it is not counted against it.
    onUnhandledError: (error) => !isClosedChannelRetry(error),
    // The files that take minutes start first, also in a clean clone that has no record of durations.
    sequence: { sequencer: HeavyFirstSequencer },
    reporters: ['default'],
  },
});
