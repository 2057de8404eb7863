// The upkeep's renewal of long-term evidence (src/evidence/renewal.ts) over simulated years: a seal made today,
// B-LTA with the sandbox's three-year TSA, renewed before that TSA's certificate ends by an authority whose
// certificate lasts longer, still verifies in 2040; left alone, it does not. Real seals, real tokens, the
// archive's own checks; only the clock of the authorities is moved.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { parseCertificates } from '../../src/evidence/pki.js';
import { renewalVerdict, renewEvidence, RenewalRefused, type RenewalPolicy } from '../../src/evidence/renewal.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { sourcesAt, timestampingCa, YEAR } from '../support/renewal.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

const DAY = 24 * 3600 * 1000;
const in2040 = new Date('2040-06-01T00:00:00Z');
let seal: SandboxSeal;
let sealed: Buffer;
let later: Awaited<ReturnType<typeof timestampingCa>>;
let policy: RenewalPolicy;

beforeAll(async () => {
  seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-renewal-seal-')));
  sealed = await seal.seal(Buffer.from(await samplePdf('Contract')), 'signed', new Date());
  // The authority the renewal uses: a newer CA, whose TSA lasts past 2040.
  later = await timestampingCa('renewal', new Date(), 20, 16);
  policy = {
    trust: trustAnchorsOnly([...parseCertificates(seal.caCertificate), ...parseCertificates(later.ca.certificate)]),
    horizonMs: 180 * DAY,
  };
});

describe('evidence renewal', () => {
  it('is not due today, is due within the horizon of the TSA certificate’s end, and is too late after it', async () => {
    const now = new Date();
    const today = await renewalVerdict(sealed, policy, now);
    expect(today).toMatchObject({ due: false });
    const ends = Date.parse(today.check.evidenceExpiresAt!);
    expect(ends).toBe(Date.parse(seal.timestampAuthority.notAfter));
    expect(await renewalVerdict(sealed, policy, new Date(ends - 100 * DAY))).toMatchObject({ due: true, reason: 'expiring' });
    const lapsed = await renewalVerdict(sealed, policy, new Date(ends + DAY));
    expect(lapsed).toMatchObject({ due: 'lapsed' });
    expect(lapsed.check.indication).toBe('INDETERMINATE');
    // An operator's sweep: every time-stamp older than a date (an algorithm retired) is renewed, whatever its end.
    expect(await renewalVerdict(sealed, { ...policy, renewTimestampedBefore: new Date(now.getTime() + DAY) }, now)).toMatchObject({
      due: true,
      reason: 'requested',
    });
  });

  it('renewed before the TSA certificate ends, the seal still verifies in 2040; never renewed, it does not', async () => {
    const ends = Date.parse(seal.timestampAuthority.notAfter);
    const at = new Date(ends - 100 * DAY);
    const { pdf: renewed, check } = await renewEvidence(
      sealed,
      sourcesAt(later.tsa, [later.revocation], () => at),
      policy,
      at,
    );
    expect(renewed.subarray(0, sealed.length).equals(sealed)).toBe(true);
    expect(check).toMatchObject({ level: 'B-LTA', indication: 'TOTAL_PASSED' });
    expect(check.archiveTimestamps).toHaveLength(2);
    expect(check.archiveTimestamps[1]).toBe(new Date(Math.floor(at.getTime() / 1000) * 1000).toISOString());
    expect(Date.parse(check.evidenceExpiresAt!)).toBeGreaterThan(in2040.getTime());

    const in40 = await checkPdfSignature(renewed, policy.trust, in2040);
    expect(in40.problems).toEqual([]);
    expect(in40).toMatchObject({ indication: 'TOTAL_PASSED', level: 'B-LTA' });
    const alone = await checkPdfSignature(sealed, policy.trust, in2040);
    expect(alone.indication).toBe('INDETERMINATE');
    expect(alone.problems.join()).toMatch(/no longer vouches/);
  });

  it('refuses a renewal that would not last longer, and one of evidence that already lapsed', async () => {
    const ends = Date.parse(seal.timestampAuthority.notAfter);
    const at = new Date(ends - 100 * DAY);
    // An authority whose certificate ends before the one it would renew: the renewal gains nothing.
    const short = await timestampingCa('short', new Date(), 20, 1);
    const shortPolicy = { ...policy, trust: trustAnchorsOnly([...policy.trust.seal.anchors, ...parseCertificates(short.ca.certificate)]) };
    await expect(
      renewEvidence(
        sealed,
        sourcesAt(short.tsa, [short.revocation], () => at),
        shortPolicy,
        at,
      ),
    ).rejects.toThrow(RenewalRefused);
    const tooLate = new Date(ends + DAY);
    await expect(
      renewEvidence(
        sealed,
        sourcesAt(later.tsa, [later.revocation], () => tooLate),
        policy,
        tooLate,
      ),
    ).rejects.toThrow(/does not hold/);
  });

  it('chains renewals: each new time-stamp covers the last, and the check follows them all', async () => {
    const first = new Date(Date.parse(seal.timestampAuthority.notAfter) - 100 * DAY);
    const once = await renewEvidence(
      sealed,
      sourcesAt(later.tsa, [later.revocation], () => first),
      policy,
      first,
    );
    // Fifteen years on, the second authority's certificate nears its end too: a third one takes over.
    const third = await timestampingCa('third', new Date(first.getTime() + 10 * YEAR), 30, 25);
    const thirdPolicy = { ...policy, trust: trustAnchorsOnly([...policy.trust.seal.anchors, ...parseCertificates(third.ca.certificate)]) };
    const second = new Date(Date.parse(once.check.evidenceExpiresAt!) - 100 * DAY);
    expect(await renewalVerdict(once.pdf, thirdPolicy, second)).toMatchObject({ due: true, reason: 'expiring' });
    const twice = await renewEvidence(
      once.pdf,
      sourcesAt(third.tsa, [third.revocation], () => second),
      thirdPolicy,
      second,
    );
    expect(twice.check.archiveTimestamps).toHaveLength(3);
    const in2050 = new Date('2050-01-01T00:00:00Z');
    expect(await checkPdfSignature(twice.pdf, thirdPolicy.trust, in2050)).toMatchObject({ indication: 'TOTAL_PASSED' });
  });
});
