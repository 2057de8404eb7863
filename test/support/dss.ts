// The EU's DSS (Digital Signature Services, 6.3), an independent judge of our PAdES seals: a Java CLI
// (test/validators/dss) built once per machine by scripts/ensure-dss.sh, run once per batch of files,
// offline, under a strict policy (test/validators/dss/policy.xml).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ExternalVerdict } from './external-verdict.js';

export type { ExternalVerdict } from './external-verdict.js';

const run = promisify(execFile);

/** The strict validation policy the verdicts are given under. */
export const DSS_POLICY = fileURLToPath(new URL('../validators/dss/policy.xml', import.meta.url));

/** Small heap and the serial collector: the CI machine has 2 cores, shared. Headless: DSS renders pages to compare revisions. */
const JVM_FLAGS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xmx768m', '-Djava.awt.headless=true'];

let jar: Promise<string> | undefined;

/** The command to run the CLI, built once per machine by scripts/ensure-dss.sh (which it calls). */
export async function dssCommand(): Promise<string[]> {
  jar ??= run('bash', [fileURLToPath(new URL('../../scripts/ensure-dss.sh', import.meta.url))], {
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => stdout.trim(),
    (err: Error & { stderr?: string }) => {
      jar = undefined;
      throw new Error(`scripts/ensure-dss.sh failed: ${err.stderr ?? err.message}`);
    },
  );
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  // Java ignores TMPDIR: its temporary files go where the test run's do (test/setup/temporal-server.ts).
  return [java, ...JVM_FLAGS, `-Djava.io.tmpdir=${tmpdir()}`, '-jar', await jar];
}

/** Validates every PDF in `files` (absolute paths, all in one JVM) against the PEM trust anchors; `at`: validation time (default now). */
export async function validateWithDss(
  files: string[],
  trustAnchorsPem: string,
  options: { at?: Date } = {},
): Promise<Map<string, ExternalVerdict>> {
  const names = files.map((f) => basename(f));
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`validateWithDss: two files named ${twice}; verdicts are keyed by base name`);
  const verdicts = new Map<string, ExternalVerdict>();
  if (files.length === 0) return verdicts;
  const [command, ...args] = await dssCommand();
  const dir = await mkdtemp(join(tmpdir(), 'esign-dss-'));
  try {
    const anchors = join(dir, 'anchors.pem');
    await writeFile(anchors, trustAnchorsPem);
    const { stdout } = await run(command!, [...args, DSS_POLICY, anchors, ...(options.at ? [options.at.toISOString()] : []), ...files], {
      timeout: 300_000,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`the DSS validator failed: ${err.stderr || err.message}`);
    });
    for (const line of stdout.split('\n')) {
      if (!line.trim()) continue;
      const v = JSON.parse(line) as ExternalVerdict & { path: string };
      verdicts.set(v.file, {
        file: v.file,
        accepted: v.accepted,
        indication: v.indication,
        subIndication: v.subIndication,
        reasons: v.reasons,
        warnings: v.warnings,
        signatures: v.signatures,
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const missing = names.filter((n) => !verdicts.has(n));
  if (missing.length > 0) throw new Error(`the DSS validator gave no verdict for ${missing.join(', ')}`);
  return verdicts;
}
