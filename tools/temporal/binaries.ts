import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const scriptPath = fileURLToPath(new URL('../../scripts/ensure-temporal.sh', import.meta.url));

export interface TemporalBinaries {
  cli?: string;
  testServer?: string;
}

/**
 * Runs scripts/ensure-temporal.sh (the single place that knows how to find or
 * install the binaries) and returns the paths it found. A binary that could not
 * be found is left undefined so callers can fall back to the SDK's download.
 */
export async function ensureTemporalBinaries(which: 'cli' | 'test-server' | 'all' = 'all'): Promise<TemporalBinaries> {
  let stdout: string;
  let stderr: string;
  try {
    ({ stdout, stderr } = await execFileAsync('bash', [scriptPath, which], { maxBuffer: 1 << 20 }));
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    // Exit 3 means "nothing local worked": keep what was found, report the rest.
    if (e.code !== 3) throw new Error(`ensure-temporal.sh failed: ${e.stderr?.trim() || String(err)}`, { cause: err });
    stdout = e.stdout ?? '';
    stderr = e.stderr ?? '';
  }
  const found: TemporalBinaries = {};
  for (const line of stdout.split('\n')) {
    const [key, ...rest] = line.split('=');
    const value = rest.join('=').trim();
    if (key === 'TEMPORAL_CLI_PATH' && value) found.cli = value;
    if (key === 'TEMPORAL_TEST_SERVER_PATH' && value) found.testServer = value;
  }
  if ((which !== 'test-server' && !found.cli) || (which !== 'cli' && !found.testServer)) {
    process.emitWarning(`Temporal binaries incomplete; falling back to the SDK download. ${stderr.trim()}`);
  }
  return found;
}

export type ServerExecutable = { type: 'existing-path'; path: string } | { type: 'cached-download' };

export function executableFor(path: string | undefined): ServerExecutable {
  return path ? { type: 'existing-path', path } : { type: 'cached-download' };
}
