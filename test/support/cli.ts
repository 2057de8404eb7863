// The real `esign` binary (bin/esign.js) against the suite's Temporal server, as an operator runs it.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const bin = fileURLToPath(new URL('../../bin/esign.js', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `esign <args>` with the suite's Temporal address and `env` (read at each run: a test's setup fills it late). */
export function esignCli(env: () => Record<string, string>, timeoutMs = 60_000): (...args: string[]) => Promise<CliRun> {
  return (...args) =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [bin, ...args],
        { env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), ...env() }, timeout: timeoutMs },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });
}
