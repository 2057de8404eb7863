import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esignCli } from '../support/cli.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv;
let dataDir: string;

beforeAll(async () => {
  // The whole system, as in the dev stack: webhooks reach the workflows through a bridge.
  env = await startEsignTestEnv({ bridge: true });
  dataDir = await mkdtemp(join(tmpdir(), 'esign-cli-'));
});
afterAll(async () => {
  await env?.close();
});

/** Runs the real `esign` binary against the suite's Temporal server and the test sandbox. */
const esign = esignCli(() => ({
  ESIGN_TASK_QUEUE: env.taskQueue,
  ESIGN_PROVIDER_URL: env.sandbox.running.url,
  ESIGN_DATA_DIR: dataDir,
}));

describe('esign CLI', () => {
  it('runs the demo hands-off and exits 0 once the archive is verified; then status, list and download work on it', async () => {
    const run = await esign('demo', '--auto-sign', '--timeout', '60');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Signing URL for Ada Lovelace: http/);
    expect(run.stdout).toMatch(/Archive verified: .*completed\.zip/);
    const referenceId = /referenceId (demo-[a-z0-9]+)/.exec(run.stdout)![1]!;

    const status = await esign('--json', 'status', referenceId);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ phase: 'completed', referenceId, result: { status: 'completed' } });
    // For people: the seal of each document, its signer, the claimed and the time-stamped signing times, and hashes.
    const statusText = await esign('status', referenceId);
    expect(statusText.stdout).toMatch(
      /Service agreement\.pdf\s+valid\s+TOTAL_PASSED\s+B-LTA\s+CN=esign sandbox document seal, O=esign sandbox\s+[0-9a-f]{16}…\s+20\d\d-[\d-]+T[\d:.]+Z\s+20\d\d-[\d-]+T[\d:.]+Z/,
    );
    expect(statusText.stdout).toMatch(/certificate-of-completion\.pdf\s+valid\s+TOTAL_PASSED\s+B-LTA/);
    expect(statusText.stdout).toMatch(/audit trail: audit-trail\.json, \d+ events, sha256 [0-9a-f]{64}, chain head [0-9a-f]{64}\n/);

    const downloaded = await esign('--json', 'download', referenceId, join(dataDir, 'out'));
    expect(downloaded.code).toBe(0);
    const got = JSON.parse(downloaded.stdout) as {
      file: string;
      manifest: string;
      sha256: string;
      files: string[];
      evidence: {
        documents: {
          signature: {
            result: string;
            validation?: { level: string; indication: string; subIndication: string | null; time: string; evidenceExpiresAt?: string };
          };
          originalSha256: string | null;
          providerOriginalSha256: string | null;
        }[];
      };
    };
    expect(got.files).toEqual(['Service agreement.pdf', 'Data processing annex.pdf', 'certificate-of-completion.pdf', 'audit-trail.json']);
    // The ZIP and, beside it, its manifest (docs/evidence.md's auditor recipe starts from both), which names that ZIP.
    expect([got.file, got.manifest]).toEqual([
      join(dataDir, 'out', `${referenceId}.zip`),
      join(dataDir, 'out', `${referenceId}.manifest.json`),
    ]);
    expect(
      createHash('sha256')
        .update(await readFile(got.file))
        .digest('hex'),
    ).toBe(got.sha256);
    expect(JSON.parse(await readFile(got.manifest, 'utf8'))).toMatchObject({ referenceId, zip: { sha256: got.sha256 } });
    expect(got.evidence.documents.map((d) => d.signature.result)).toEqual(['valid', 'valid']);
    // The validation report, per document: the level, ETSI EN 319 102-1's indication, and the time vouched for.
    for (const d of got.evidence.documents) {
      expect(d.signature.validation).toMatchObject({ level: 'B-LTA', indication: 'TOTAL_PASSED', subIndication: null });
      expect(d.signature.validation!.time).toMatch(/^20\d\d-/);
      // Until the sandbox TSA's certificate (three years) ends: when the evidence upkeep must have renewed it.
      expect(Date.parse(d.signature.validation!.evidenceExpiresAt!) - Date.now()).toBeGreaterThan(2 * 365 * 24 * 3600 * 1000);
    }
    // The demo uploads the PDFs itself and gives their hashes: the provider signed exactly those.
    for (const d of got.evidence.documents) expect(d.originalSha256).toMatch(/^[0-9a-f]{64}$/);
    for (const d of got.evidence.documents) expect(d.providerOriginalSha256).toBe(d.originalSha256);

    const provider = await esign('--json', 'list', '--provider', '--status', 'completed');
    expect((JSON.parse(provider.stdout) as { rows: { referenceId: string }[] }).rows.map((r) => r.referenceId)).toContain(referenceId);
  }, 180_000);

  it('starts from flags, issues URLs, cancels, and uses exit codes that mean something', async () => {
    const started = await esign(
      '--json',
      'start',
      '--file',
      env.pdfs[0]!,
      '--signer',
      'Grace Hopper <grace@example.com>',
      '--reference-id',
      `cli-${Date.now()}`,
    );
    expect(started.code).toBe(0);
    const { referenceId, participants } = JSON.parse(started.stdout) as { referenceId: string; participants: { id: string }[] };
    await expect
      .poll(async () => (JSON.parse((await esign('--json', 'status', referenceId)).stdout) as { phase: string }).phase, { timeout: 30_000 })
      .toBe('awaiting_signatures');
    const url = await esign('url', referenceId, participants[0]!.id);
    expect(url.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sign\//);
    expect((await esign('url', referenceId, 'stranger')).code).toBe(1);
    expect((await esign('download', referenceId, dataDir)).code).toBe(4); // not completed
    // Only a refused archive can be retried; the workflow's reason is what the operator reads.
    const retried = await esign('retry-archive', referenceId);
    expect(retried.code).toBe(1);
    expect(retried.stderr).toMatch(
      /^esign: refused: transaction is awaiting_signatures: only a refused archive \(archive_invalid\) can be retried/,
    );
    const cancelled = await esign('--json', 'cancel', referenceId, '--reason', 'test');
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ status: 'cancelled', reason: 'test' });

    const unknown = await esign('status', 'no-such-reference');
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/no transaction with referenceId "no-such-reference" \(list them with: npx esign list\)/);

    // A signer declines: status says who, why, and how it ended.
    const declinedRef = `cli-declined-${Date.now()}`;
    const second = await esign(
      '--json',
      'start',
      '--file',
      env.pdfs[0]!,
      '--signer',
      'Ada Lovelace <ada@example.com>',
      '--reference-id',
      declinedRef,
    );
    expect(second.code).toBe(0);
    const ada = (JSON.parse(second.stdout) as { participants: { id: string }[] }).participants[0]!.id;
    // Declined through the CLI, as a backend's test or a demo does without a browser (once the provider has it).
    await expect
      .poll(async () => (await esign('decline', declinedRef, ada, '--reason', 'wrong name on page 2')).code, { timeout: 30_000 })
      .toBe(0);
    // Never against anything but the sandbox: a provider URL that is not the sandbox's is refused as a usage error.
    const elsewhere = await esignCli(() => ({
      ESIGN_TASK_QUEUE: env.taskQueue,
      ESIGN_PROVIDER_URL: 'http://127.0.0.1:9',
      ESIGN_DATA_DIR: dataDir,
    }))('sign', declinedRef, ada);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toMatch(/only against the provider sandbox/);
    await expect
      .poll(async () => (JSON.parse((await esign('--json', 'status', declinedRef)).stdout) as { phase: string }).phase, { timeout: 30_000 })
      .toBe('declined');
    const shown = await esign('status', declinedRef);
    expect(shown.stdout).toMatch(/outcome\s+declined/);
    expect(shown.stdout).toMatch(/reason\s+wrong name on page 2/);
    expect(shown.stdout).toMatch(/declinedBy\s+Ada Lovelace/);
    expect(shown.stdout).toMatch(/declined/);
    expect((await esign('start', '--file', env.pdfs[0]!)).code).toBe(2); // no signer
    expect((await esign('start', '--signer', 'not a signer')).code).toBe(2);
    const help = await esign('start', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--signer');
    // About twenty CLI processes, each a Node start: minutes on a loaded 2-core machine.
  }, 240_000);
});
