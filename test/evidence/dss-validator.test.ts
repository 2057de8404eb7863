// The EU DSS validator (test/support/dss.ts) that other tests use as an independent judge of PAdES seals:
// built once per machine, it accepts a genuine sandbox seal under its strict policy and refuses a tampered one.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { dssCommand, validateWithDss } from '../support/dss.js';

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('the DSS validator', () => {
  it('accepts a genuine sandbox seal (PAdES B-LTA) and refuses it with one signed byte changed', { timeout: 600_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-dss-test-'));
    dirs.push(dir);
    const seal = await SandboxSeal.open(join(dir, 'pki'));
    const sealed = await seal.seal(await samplePdf('Judged by DSS'), 'Signed by every participant', new Date());

    // One byte of the sealed revision: a digit of the document information's creation date, which the seal covers.
    const firstRange = /\/ByteRange\s*\[\s*0\s+(\d+)/.exec(sealed.toString('latin1'));
    const at = sealed.indexOf('/CreationDate (D:') + '/CreationDate (D:'.length + 3;
    expect(firstRange).not.toBeNull();
    expect(at).toBeGreaterThan(20);
    expect(at).toBeLessThan(Number(firstRange![1]));
    const tampered = Buffer.from(sealed);
    tampered[at] = tampered[at] === 0x31 ? 0x32 : 0x31;

    const genuine = join(dir, 'genuine.pdf');
    const changed = join(dir, 'tampered.pdf');
    await writeFile(genuine, sealed);
    await writeFile(changed, tampered);
    const verdicts = await validateWithDss([genuine, changed], seal.caCertificate);

    const good = verdicts.get('genuine.pdf')!;
    expect(good, JSON.stringify(good, null, 2)).toMatchObject({
      accepted: true,
      indication: 'TOTAL_PASSED',
      subIndication: null,
      reasons: [],
    });
    expect(good.signatures.map((s) => [s.kind, s.level, s.indication])).toEqual([
      ['signature', 'PAdES-BASELINE-LTA', 'TOTAL_PASSED'],
      ['timestamp', 'SIGNATURE_TIMESTAMP', 'PASSED'],
      ['timestamp', 'DOCUMENT_TIMESTAMP', 'PASSED'],
    ]);

    const bad = verdicts.get('tampered.pdf')!;
    expect(bad, JSON.stringify(bad, null, 2)).toMatchObject({ accepted: false, indication: 'TOTAL_FAILED', subIndication: 'HASH_FAILURE' });
    expect(bad.signatures[0]).toMatchObject({ kind: 'signature', indication: 'TOTAL_FAILED', subIndication: 'HASH_FAILURE' });
    expect(bad.reasons.join('\n')).toMatch(/not intact/);
  });

  it('is built once per machine: asking again reuses the cached jar', async () => {
    const jar = (await dssCommand()).at(-1)!;
    const started = Date.now();
    const { stdout } = await run('bash', [fileURLToPath(new URL('../../scripts/ensure-dss.sh', import.meta.url))]);
    expect(stdout.trim()).toBe(jar);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
