// The /DSS's OCSP responses and CRLs are checked once per process for the same bytes and anchor
// (src/evidence/archive-timestamps.ts): a verdict that depends on the time is never reused past it. pkijs judges
// an OCSP responder's chain at the wall clock, so once the CA has expired the response is refused again, though
// it passed a moment before; a CRL's check looks at no date.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkPdfSignature } from '../src/evidence/pades-verify.js';
import { parseCertificates } from '../src/evidence/pki.js';
import { samplePdf } from '../src/sandbox/pdf.js';
import { SandboxSeal } from '../src/sandbox/seal.js';
import { trustAnchorsOnly } from '../src/evidence/trust.js';

const OCSP_REFUSED = 'an OCSP response in the /DSS is not signed by a trust anchor';
const CRL_REFUSED = 'a CRL in the /DSS is not signed by a trust anchor';

afterEach(() => {
  vi.useRealTimers();
});

describe('the /DSS revocation data of a seal checked again', () => {
  it('is refused again once the wall clock passes the CA’s end, though it held before; a CRL still holds', async () => {
    const seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-revocation-verdicts-')));
    const sealed = await seal.seal(Buffer.from(await samplePdf('Contract')), 'signed', new Date());
    const anchors = parseCertificates(seal.caCertificate);
    const now = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(now).toMatchObject({ indication: 'TOTAL_PASSED', level: 'B-LTA' });

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(anchors[0]!.notAfter.value.getTime() + 24 * 3600 * 1000);
    const after = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(after.problems).toContain(OCSP_REFUSED);
    expect(after.problems).not.toContain(CRL_REFUSED);

    vi.useRealTimers();
    const again = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(again.problems).toEqual([]);
  });
});
