// pyHanko as an independent judge of a whole batch of PDFs: one Python process (test/validators/pyhanko_batch.py),
// JSON verdicts, AdES validation (EN 319 102-1, LTA) with revocation required and nothing fetched.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ExternalVerdict } from './external-verdict.js';

export type { ExternalSignatureVerdict, ExternalVerdict } from './external-verdict.js';

const script = fileURLToPath(new URL('../validators/pyhanko_batch.py', import.meta.url));
const ensurePyhanko = fileURLToPath(new URL('../../scripts/ensure-pyhanko.sh', import.meta.url));

/** pyHanko's own report on one signature or document time-stamp (what pyhanko_batch.py prints). */
export interface PyhankoSignatureReport {
  id: string;
  kind: 'signature' | 'document_timestamp';
  sub_filter: string | null;
  /** The PDF revision (0-based) the signature covers. */
  revision: number | null;
  intact: boolean | null;
  valid: boolean | null;
  trusted: boolean | null;
  revoked: boolean | null;
  /** ENTIRE_FILE | ENTIRE_REVISION | CONTIGUOUS_BLOCK_FROM_START | UNCLEAR */
  coverage: string | null;
  /** NONE | LTA_UPDATES | FORM_FILLING | ANNOTATIONS | OTHER, by pyHanko's difference analysis */
  modification_level: string | null;
  /** Why the difference analysis found the updates suspicious, when it did. */
  modification_detail?: string;
  docmdp_ok: boolean | null;
  bottom_line: boolean | null;
  indication: string;
  sub_indication: string | null;
  failure_message: string | null;
  level: string | null;
  signature_timestamp?: { indication: string; sub_indication: string | null; time: string | null; trusted: boolean | null } | null;
  problems: string[];
  acceptable: boolean;
  [more: string]: unknown;
}

/** pyhanko_batch.py's report on one file. */
export interface PyhankoFileReport {
  file: string;
  name: string;
  /** accepted | rejected | unsigned | refused: <reason> */
  verdict: string;
  accepted: boolean;
  indication: string;
  sub_indication: string | null;
  error: string | null;
  reasons: string[];
  signatures: PyhankoSignatureReport[];
  /** pyHanko's warnings while judging the file. */
  log: string[];
  seconds: number;
  [more: string]: unknown;
}

/** The shared verdict, with pyHanko's whole report on the file beside it. */
export interface PyhankoVerdict extends ExternalVerdict {
  report: PyhankoFileReport;
}

export interface PyhankoOptions {
  /** The validation time (default: now). */
  at?: Date;
  /**
   * `require` (default): revocation data for every certificate but the anchor, as `pyhanko sign adesverify` has it.
   * `hard-fail`: pyHanko's legacy mode, which only checks certificates that name a CRL distribution point or an
   * OCSP responder (and so, for certificates that name neither, checks nothing).
   */
  revocation?: 'require' | 'hard-fail';
  /** Seconds one file may take before it is refused (default 60). */
  timeoutSeconds?: number;
}

let python: Promise<string> | undefined;

/** The Python of the pinned pyHanko install (scripts/ensure-pyhanko.sh prints its CLI, in the same virtualenv). */
export function pyhankoPython(): Promise<string> {
  // A failed install is tried again by the next caller (a test process runs many files), not remembered.
  python ??= promisify(execFile)('bash', [ensurePyhanko], { timeout: 300_000 }).then(
    ({ stdout }) => join(dirname(stdout.trim()), 'python'),
    (err: unknown) => {
      python = undefined;
      throw err;
    },
  );
  return python;
}

/**
 * Judges `files` with pyHanko in one Python process, `trustAnchorsPem` (one or more PEM certificates) its only trust
 * roots. Resolves with one verdict per file, keyed by base name (so base names must differ); a file pyHanko cannot
 * read is a verdict (`indication: 'ERROR'`, the reason in `reasons`), never a rejection of the batch.
 */
export async function validateWithPyhanko(
  files: string[],
  trustAnchorsPem: string,
  options: PyhankoOptions = {},
): Promise<Map<string, PyhankoVerdict>> {
  const names = files.map((f) => basename(f));
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new Error(`validateWithPyhanko: two files are named ${twice}; verdicts are keyed by base name`);
  const verdicts = new Map<string, PyhankoVerdict>();
  if (files.length === 0) return verdicts;

  const dir = await mkdtemp(join(tmpdir(), 'esign-pyhanko-batch-'));
  try {
    const trust = join(dir, 'anchors.pem');
    await writeFile(trust, trustAnchorsPem);
    const timeout = options.timeoutSeconds ?? 60;
    const job = {
      trust,
      at: options.at?.toISOString() ?? null,
      files: files.map((f) => resolve(f)),
      revocation: options.revocation ?? 'require',
      timeout,
    };
    const { stdout, stderr, code } = await run(await pyhankoPython(), [script], JSON.stringify(job), (timeout + 5) * files.length + 60);
    const reports = stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as PyhankoFileReport);
    if (code !== 0 || reports.length !== files.length) {
      throw new Error(`pyhanko_batch.py exited with ${code} after ${reports.length} of ${files.length} verdicts:\n${stderr}`);
    }
    for (const report of reports) verdicts.set(report.name, toVerdict(report));
    return verdicts;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function toVerdict(report: PyhankoFileReport): PyhankoVerdict {
  return {
    file: report.name,
    accepted: report.accepted,
    indication: report.indication,
    subIndication: report.sub_indication,
    reasons: report.reasons,
    warnings: report.log,
    signatures: report.signatures.map((s) => ({
      id: s.id,
      kind: s.kind === 'document_timestamp' ? ('timestamp' as const) : ('signature' as const),
      indication: s.indication,
      subIndication: s.sub_indication,
      ...(s.kind === 'document_timestamp' ? { level: 'DOCUMENT_TIMESTAMP' } : s.level ? { level: s.level } : {}),
      ...(s.problems.length > 0 ? { errors: s.problems } : {}),
    })),
    report,
  };
}

function run(
  command: string,
  args: string[],
  input: string,
  timeoutSeconds: number,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutSeconds * 1000, killSignal: 'SIGKILL' });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolvePromise({
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8') + (signal ? `\n(killed by ${signal})` : ''),
        code: code ?? -1,
      }),
    );
    child.stdin.end(input);
  });
}
