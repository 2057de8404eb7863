// Who signed a /DSS's OCSP response or CRL is remembered per process for the same bytes and issuer
// (src/evidence/revocation-check.ts); what depends on the time (dates, freshness, the paths' validity) is judged
// at every check. A check made once the CA has ended must not poison the next, nor be spared by the one before.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { parseCertificates } from '../../src/evidence/pki.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the /DSS revocation data of a seal checked again', () => {
  it('is refused once the check is past the CA’s end, though it held before, and holds again at the time it held', async () => {
    const seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-revocation-verdicts-')));
    const sealed = await seal.seal(Buffer.from(await samplePdf('Contract')), 'signed', new Date());
    const anchors = parseCertificates(seal.caCertificate);
    const now = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(now).toMatchObject({ indication: 'TOTAL_PASSED', level: 'B-LTA' });

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(anchors[0]!.notAfter.value.getTime() + 24 * 3600 * 1000);
    const after = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(after.indication).toBe('INDETERMINATE');
    expect(after.problems.join()).toMatch(/ended .* before|not at/);

    vi.useRealTimers();
    const again = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(again.problems).toEqual([]);
  });
});
