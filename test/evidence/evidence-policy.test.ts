// What each evidence policy does with a completed ZIP, and the defaults a worker takes from its environment.
// Real ZIPs sealed by a sandbox CA, read by the archive's own verifier (verifyZip with the evidence check as its
// inspector, as the archive activity's second pass does); the end-to-end refusal through the workflow is in
// test/evidence/evidence.test.ts. Under `require` nothing passes unverified: every entry is accounted for, whatever its name.
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { evidenceCheck, type ArchiveEvidence, type EvidencePolicy, type ExpectedDocument } from '../../src/archive/evidence.js';
import { verifyZip } from '../../src/archive/zip-verify.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import type { StreamedPdfOptions } from '../../src/evidence/pdf-stream.js';
import { sealPdf } from '../../packages/sandbox/src/evidence/pades-sign.js';
import { createCertificateAuthority, issueSigningCertificate, loadSigningIdentity, parseCertificates } from '../../src/evidence/pki.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { chainEvents } from '../../src/esign/audit-chain.js';
import { AUDIT_TRAIL_FORMAT_V1, type AuditTrail } from '../../src/esign/evidence.js';
import { forgeCompletedZip, sha256, type ForgedDocument } from '../support/evidence.js';
import { parsePin, providerTrust, trustAnchorsOnly } from '../../src/evidence/trust.js';

let seal: SandboxSeal;
let originals: Buffer[];
const tx = { id: 'tx-1', esignId: 'es-1' };
const titles = ['Contract', 'Annex'];
const paths = ['uploads/contract.pdf', 'uploads/annex.pdf'];

beforeAll(async () => {
  seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-policy-seal-')));
  originals = await Promise.all(titles.map(async (t) => Buffer.from(await samplePdf(t))));
});

const policy = (signatures: EvidencePolicy['signatures'], requireCompletionCertificate = signatures === 'require'): EvidencePolicy => ({
  signatures,
  trust: signatures === 'off' ? trustAnchorsOnly([]) : providerTrust(seal),
  requireCompletionCertificate,
});
const expected = (withHashes = true): ExpectedDocument[] =>
  titles.map((title, i) => ({ title, StoragePath: paths[i]!, ...(withHashes ? { sha256: sha256(originals[i]!) } : {}) }));
const docs = (change: (d: ForgedDocument[]) => void = () => undefined): ForgedDocument[] => {
  const d = titles.map((title, i) => ({ title, StoragePath: paths[i]!, original: originals[i]! }));
  change(d);
  return d;
};

/**
 * The archive's verdict on a ZIP: what the manifest would record, or why it is refused. Each ZIP is judged twice,
 * with every PDF held whole and with the one pass a large file gets (small windows, so these small files take the
 * large file's path: spans hashed as they stream past, the sealed revision read from its cross-reference table);
 * the two verdicts must be the same.
 */
async function judge(zip: Buffer, p: EvidencePolicy, expect_ = expected()): Promise<{ evidence: ArchiveEvidence } | { refused: string }> {
  const file = join(await mkdtemp(join(tmpdir(), 'esign-policy-')), 'completed.zip');
  await writeFile(file, zip);
  const now = new Date();
  const verdict = async (pass: StreamedPdfOptions) => {
    const check = evidenceCheck({ transactionId: tx.id, esignId: tx.esignId, documents: expect_ }, p, () => now, pass);
    try {
      return { evidence: check.conclude(await verifyZip(file, undefined, check.inspector)) };
    } catch (err) {
      return { refused: (err as Error).message };
    }
  };
  const whole = await verdict({});
  expect(await verdict({ holdWhole: 0, head: 20 * 1024, tail: 48 * 1024 }), 'the one-pass check judges as the whole-file check').toEqual(
    whole,
  );
  return whole;
}
const refusal = (v: Awaited<ReturnType<typeof judge>>) => ('refused' in v ? v.refused : 'accepted');
const accepted = (v: Awaited<ReturnType<typeof judge>>) => {
  if ('refused' in v) throw new Error(`refused: ${v.refused}`);
  return v.evidence;
};

describe('a sound ZIP', () => {
  it('is accepted under every policy; require and warn record each seal as valid and trusted, off as not checked', async () => {
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs() });
    for (const p of ['require', 'warn'] as const) {
      const evidence = accepted(await judge(zip, policy(p)));
      expect(evidence.documents.map((d) => [d.entry, d.signature.result, d.signature.trusted])).toEqual([
        ['Contract.pdf', 'valid', true],
        ['Annex.pdf', 'valid', true],
      ]);
      expect(evidence.certificateOfCompletion?.signature.result).toBe('valid');
      expect(evidence.unaccounted).toBeUndefined();
    }
    const off = accepted(await judge(zip, policy('off')));
    expect(off.documents.map((d) => d.signature.result)).toEqual(['not-checked', 'not-checked']);
  });

  it('is matched by the audit trail and the hashes, not by file name: a sealed document named "Contract" is accepted', async () => {
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs((d) => (d[0]!.entry = 'Contract')) });
    const evidence = accepted(await judge(zip, policy('require')));
    expect(evidence.documents[0]).toMatchObject({ entry: 'Contract', signature: { result: 'valid', trusted: true } });
  });
});

describe('the ZIP that passed unverified before (an unsealed document entry named "Contract")', () => {
  const failOpen = () =>
    forgeCompletedZip({
      seal,
      transaction: tx,
      documents: docs((d) => Object.assign(d[0]!, { entry: 'Contract', sealed: false as const })),
    });

  it('is refused under require, with its reason', async () => {
    expect(refusal(await judge(await failOpen(), policy('require')))).toMatch(/^"Contract": the PDF is not signed$/);
  });

  it('is archived under warn, recorded as invalid; under off, as not checked', async () => {
    const warn = accepted(await judge(await failOpen(), policy('warn')));
    expect(warn.documents[0]!.signature).toMatchObject({ result: 'invalid', problems: ['the PDF is not signed'] });
    const off = accepted(await judge(await failOpen(), policy('off')));
    expect(off.documents[0]!.signature.result).toBe('not-checked');
  });
});

describe('hostile ZIPs under require', () => {
  const cases: [string, () => Promise<Buffer>, RegExp][] = [
    [
      'an extra sealed PDF no document accounts for',
      async () =>
        forgeCompletedZip({
          seal,
          transaction: tx,
          documents: docs(),
          extra: [{ name: 'Side letter.pdf', data: await seal.seal(await samplePdf('Side letter'), 'x', new Date()) }],
        }),
      /the ZIP holds "Side letter\.pdf", which is neither one of our documents nor evidence/,
    ],
    [
      'an extra unsealed PDF without an extension',
      async () => forgeCompletedZip({ seal, transaction: tx, documents: docs(), extra: [{ name: 'notes', data: originals[0]! }] }),
      /"notes": the PDF is not signed/,
    ],
    [
      'a document the audit trail lists but the ZIP does not hold',
      () => forgeCompletedZip({ seal, transaction: tx, documents: docs((d) => (d[1]!.inZip = false)) }),
      /the audit trail names "Annex\.pdf" for document 2 \("Annex"\), which the ZIP does not hold/,
    ],
    [
      'an unsealed certificate of completion',
      () => forgeCompletedZip({ seal, transaction: tx, documents: docs(), certificate: 'unsealed' }),
      /"certificate-of-completion\.pdf": the PDF is not signed/,
    ],
    [
      'no certificate of completion',
      () => forgeCompletedZip({ seal, transaction: tx, documents: docs(), certificate: false }),
      /no certificate-of-completion\.pdf, which the evidence policy requires/,
    ],
    ['no audit trail', () => forgeCompletedZip({ seal, transaction: tx, documents: docs(), trail: false }), /no audit-trail\.json/],
    [
      'an audit trail that names one entry for both documents',
      () => forgeCompletedZip({ seal, transaction: tx, documents: docs((d) => (d[1]!.listedAs = 'Contract.pdf')) }),
      /which is already another entry's/,
    ],
    [
      'a sealed document changed after sealing',
      () =>
        forgeCompletedZip({
          seal,
          transaction: tx,
          documents: docs((d) => (d[0]!.tamper = (b) => Buffer.concat([b, Buffer.from('\n%%EOF\n')]))),
        }),
      /"Contract\.pdf": .*added after signing/,
    ],
  ];
  it.each(cases)('refuses %s', async (_name, forge, reason) => {
    expect(refusal(await judge(await forge(), policy('require')))).toMatch(reason);
  });

  it('under warn, archives them with what does not hold recorded (an extra entry as unaccounted)', async () => {
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs(), extra: [{ name: 'notes', data: originals[0]! }] });
    expect(accepted(await judge(zip, policy('warn'))).unaccounted).toEqual(['notes']);
  });

  it('archives a document we have no record of uploading (a completion no workflow owns) with its seal checked and no hash of ours', async () => {
    // The transaction workflow refuses such input under require (test/workflows/bad-input.test.ts); only a late completion gets here.
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs() });
    const evidence = accepted(await judge(zip, policy('require'), expected(false)));
    expect(evidence.documents[0]).toMatchObject({ originalSha256: null, signature: { result: 'valid', trusted: true } });
    const unsealed = await forgeCompletedZip({ seal, transaction: tx, documents: docs((d) => (d[0]!.sealed = false)) });
    expect(refusal(await judge(unsealed, policy('require'), expected(false)))).toMatch(/"Contract\.pdf": the PDF is not signed/);
  });
});

describe('the worker’s policy from its environment', () => {
  const base = { ESIGN_PROVIDER_URL: 'http://127.0.0.1:1', ESIGN_PROVIDER_TOKEN: 't' };
  const pinned = () => ({ ESIGN_SEAL_PINS: seal.sealPins.join(',') });
  const anchors = async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'esign-anchors-')), 'ca.pem');
    await writeFile(file, seal.caCertificate);
    return file;
  };

  it('configures the evidence upkeep only with a time-stamping authority, and only with trust anchors to verify renewals', async () => {
    expect(workerConfigFromEnv({ ...base, ...pinned(), ESIGN_TRUST_ANCHORS: await anchors() }).upkeep).toBeUndefined();
    const tsa = { ESIGN_EVIDENCE_TSA_URL: 'http://127.0.0.1:4010/sandbox/tsa' };
    expect(workerConfigFromEnv({ ...base, ...pinned(), ...tsa, ESIGN_TRUST_ANCHORS: await anchors() }).upkeep).toEqual({
      tsaUrl: tsa.ESIGN_EVIDENCE_TSA_URL,
      ocspUrl: undefined,
      crlUrl: undefined,
      renewBeforeMs: 180 * 24 * 3600 * 1000,
      renewTimestampedBefore: undefined,
      every: '1 day',
    });
    expect(() => workerConfigFromEnv({ ...base, ...tsa, ESIGN_SIGNATURE_VERIFICATION: 'warn' })).toThrow(
      /ESIGN_EVIDENCE_TSA_URL needs ESIGN_TRUST_ANCHORS/,
    );
    const sweep = workerConfigFromEnv({
      ...base,
      ...pinned(),
      ...tsa,
      ESIGN_TRUST_ANCHORS: await anchors(),
      ESIGN_EVIDENCE_RENEW_BEFORE: '90 days',
      ESIGN_EVIDENCE_RENEW_TIMESTAMPED_BEFORE: '2027-01-01',
    }).upkeep;
    expect(sweep).toMatchObject({ renewBeforeMs: 90 * 24 * 3600 * 1000, renewTimestampedBefore: new Date('2027-01-01') });
    expect(() => workerConfigFromEnv({ ...base, ...tsa, ESIGN_TRUST_ANCHORS: 'x', ESIGN_EVIDENCE_RENEW_BEFORE: 'soon' })).toThrow(
      /ESIGN_EVIDENCE_RENEW_BEFORE/,
    );
  });

  it('joins a Worker Deployment only when named, with a build id of its own or derived from its code', async () => {
    const env = { ...base, ...pinned(), ESIGN_TRUST_ANCHORS: await anchors() };
    expect(workerConfigFromEnv(env).deployment).toBeUndefined();
    expect(workerConfigFromEnv({ ...env, ESIGN_WORKER_DEPLOYMENT: 'esign' }).deployment).toEqual({
      name: 'esign',
      buildId: undefined,
      setCurrent: false,
    });
    expect(
      workerConfigFromEnv({ ...env, ESIGN_WORKER_DEPLOYMENT: 'esign', ESIGN_WORKER_BUILD_ID: '2.0.0', ESIGN_WORKER_SET_CURRENT: 'true' })
        .deployment,
    ).toEqual({ name: 'esign', buildId: '2.0.0', setCurrent: true });
    expect(() => workerConfigFromEnv({ ...env, ESIGN_WORKER_BUILD_ID: '2.0.0' })).toThrow(/need ESIGN_WORKER_DEPLOYMENT/);
    expect(() => workerConfigFromEnv({ ...env, ESIGN_WORKER_DEPLOYMENT: 'esign', ESIGN_WORKER_BUILD_ID: 'a b' })).toThrow(
      /ESIGN_WORKER_BUILD_ID/,
    );
  });

  it('defaults to require, with the certificate of completion, when trust anchors and pins are set', async () => {
    const { evidence } = workerConfigFromEnv({ ...base, ...pinned(), ESIGN_TRUST_ANCHORS: await anchors() });
    expect(evidence).toMatchObject({ signatures: 'require', requireCompletionCertificate: true });
    expect(evidence.trust.seal.anchors).toHaveLength(1);
    expect(evidence.trust.seal.pins).toEqual(seal.sealPins.map(parsePin));
    // Time-stamping authorities are trusted apart when told so; by default under the same anchors.
    expect(evidence.trust.timestamping).toHaveLength(1);
  });

  it('does not start under require without the provider’s sealing keys pinned, and refuses a pin it cannot read', async () => {
    // Chaining to the provider's CA is not enough: any other certificate that CA issued would seal a forged document.
    const env = { ...base, ESIGN_TRUST_ANCHORS: await anchors() };
    expect(() => workerConfigFromEnv(env)).toThrow(/require needs ESIGN_SEAL_PINS.*GET \/sandbox\/pins/);
    expect(() => workerConfigFromEnv({ ...env, ESIGN_SEAL_PINS: 'sha256/short' })).toThrow(
      /ESIGN_SEAL_PINS: "sha256\/short" is not an SPKI SHA-256 pin/,
    );
    // The same pins from a file, one per line, as GET /sandbox/pins serves them (the compose stack's way).
    const file = join(await mkdtemp(join(tmpdir(), 'esign-pins-')), 'pins');
    await writeFile(file, `${seal.sealPins.join('\n')}\n`);
    expect(workerConfigFromEnv({ ...env, ESIGN_SEAL_PINS_FILE: file }).evidence.trust.seal.pins).toEqual(seal.sealPins.map(parsePin));
    // warn still starts without pins: it archives what it cannot verify, and says so.
    expect(workerConfigFromEnv({ ...env, ESIGN_SIGNATURE_VERIFICATION: 'warn' }).evidence.trust.seal.pins).toEqual([]);
  });

  it('does not start without trust anchors unless told to archive what it cannot verify', () => {
    expect(() => workerConfigFromEnv(base)).toThrow(/set ESIGN_TRUST_ANCHORS to the provider CA .* or ESIGN_SIGNATURE_VERIFICATION=warn/);
    expect(() => workerConfigFromEnv({ ...base, ESIGN_SIGNATURE_VERIFICATION: 'require' })).toThrow(/require needs ESIGN_TRUST_ANCHORS/);
    expect(workerConfigFromEnv({ ...base, ESIGN_SIGNATURE_VERIFICATION: 'warn' }).evidence).toMatchObject({
      signatures: 'warn',
      requireCompletionCertificate: false,
    });
    expect(workerConfigFromEnv({ ...base, ESIGN_SIGNATURE_VERIFICATION: 'off' }).evidence.signatures).toBe('off');
  });
});

describe('the audit trail: hash-chained, and the copy sealed in the certificate of completion', () => {
  const alter = (change: (t: AuditTrail) => AuditTrail) =>
    forgeCompletedZip({ seal, transaction: tx, documents: docs(), alterTrail: change });

  it('a sound trail: its chain and sealed copy hold, and the manifest records its head', async () => {
    const evidence = accepted(await judge(await forgeCompletedZip({ seal, transaction: tx, documents: docs() }), policy('require')));
    expect(evidence.auditTrail!.problems).toEqual([]);
    expect(evidence.auditTrail!.head).toMatch(/^[0-9a-f]{64}$/);
  });

  const cases: [string, (t: AuditTrail) => AuditTrail, RegExp][] = [
    [
      'an event changed (its hash left as it was)',
      (t) => ({ ...t, events: t.events.map((e) => ({ ...e, ip: '10.6.6.6' })) }),
      /audit-trail\.json: audit event 1 has been altered/,
    ],
    [
      'an event changed and the chain computed again (the sealed copy still tells)',
      (t) => {
        const chain = chainEvents(
          t.transaction.id,
          t.events.map(({ seq: _s, prev: _p, hash: _h, ...e }) => ({ ...e, ip: '10.6.6.6' })),
        );
        return { ...t, events: chain.events, chain: { ...t.chain!, head: chain.head } };
      },
      /audit-trail\.json is not the copy sealed in certificate-of-completion\.pdf/,
    ],
    [
      'an original’s hash rewritten (outside the chain, inside the sealed copy)',
      (t) => ({ ...t, documents: t.documents.map((d) => ({ ...d, original: { ...d.original, sha256: 'f'.repeat(64) } })) }),
      /is not the copy sealed in certificate-of-completion\.pdf|the provider signed an original with SHA-256 f{64}/,
    ],
    ['an event dropped', (t) => ({ ...t, events: [], chain: t.chain }), /the audit trail's head [0-9a-f]{64} is not its last event's hash/],
    [
      'an unchained (v1) trail',
      (t) => ({ ...t, format: AUDIT_TRAIL_FORMAT_V1, chain: undefined, events: t.events.map(({ prev: _p, hash: _h, ...e }) => e) }),
      /audit-trail\.json is not hash-chained \(esign-audit-trail\/v1\)/,
    ],
  ];
  it.each(cases)('refuses %s under require; warn archives it with the problem recorded', async (_name, change, reason) => {
    const zip = await alter(change);
    expect(refusal(await judge(zip, policy('require')))).toMatch(reason);
    const warn = await judge(zip, policy('warn'));
    if ('evidence' in warn) expect(warn.evidence.auditTrail!.problems!.join('; ')).toMatch(reason);
    else expect(warn.refused).toMatch(/the provider signed an original/); // the uploads' check refuses under every policy
  });

  it('refuses a certificate of completion that embeds no trail', async () => {
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs(), certificate: 'without-trail' });
    expect(refusal(await judge(zip, policy('require')))).toMatch(/certificate-of-completion\.pdf does not embed the audit trail/);
  });
});

describe('checked in 2040, long after the seal’s certificate (3 years) expired', () => {
  const in2040 = new Date('2040-06-01T00:00:00Z');

  it('a B-LTA seal never renewed does not: its newest time-stamp’s certificate ended with nothing newer over it', async () => {
    // The renewal that keeps it verifying is test/evidence/evidence-renewal.test.ts's.
    const zip = await forgeCompletedZip({ seal, transaction: tx, documents: docs() });
    const file = join(await mkdtemp(join(tmpdir(), 'esign-2040-')), 'completed.zip');
    await writeFile(file, zip);
    const check = evidenceCheck({ transactionId: tx.id, esignId: tx.esignId, documents: expected() }, policy('warn'), () => in2040);
    const evidence = check.conclude(await verifyZip(file, undefined, check.inspector));
    for (const d of evidence.documents) {
      expect(d.signature.validation).toMatchObject({ indication: 'INDETERMINATE', subIndication: 'OUT_OF_BOUNDS_NO_POE' });
      expect(d.signature.problems.join()).toMatch(/document time-stamp 1 no longer vouches at the time of checking.*chain ended/);
    }
    const refused = evidenceCheck({ transactionId: tx.id, esignId: tx.esignId, documents: expected() }, policy('require'), () => in2040);
    await expect(verifyZip(file, undefined, refused.inspector).then((entries) => refused.conclude(entries))).rejects.toThrow(
      /no longer vouches/,
    );
  });

  it('a seal without a time-stamp (B-B) does not: nothing vouches it was made while its certificate was valid', async () => {
    const ca = await createCertificateAuthority({ CN: 'B-B test CA' });
    const identity = await loadSigningIdentity(await issueSigningCertificate(ca, { CN: 'B-B seal' }), [ca.certificate]);
    const sealed = await sealPdf(originals[0]!, identity, { reason: 'x', location: 'x', contactInfo: 'x', signingTime: new Date() });
    const anchors = parseCertificates(ca.certificate);
    // Today it verifies and chains, but carries no revocation data: whether its certificate was revoked is unknown.
    const now = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), new Date());
    expect(now).toMatchObject({ signatureValid: true, trusted: true, indication: 'INDETERMINATE', subIndication: 'TRY_LATER' });
    expect(now.problems).toEqual([expect.stringMatching(/^the seal: no revocation data establishes that "CN=B-B seal" was not revoked/)]);
    const later = await checkPdfSignature(sealed, trustAnchorsOnly(anchors), in2040);
    expect(later.validatedAt).toBe(in2040.toISOString());
    expect(later.problems.join()).toMatch(/does not chain to a trust anchor/);
  });

  it('a time-stamp that claims a time after the check is refused', async () => {
    const sealed = await seal.seal(originals[0]!, 'x', new Date());
    const before = await checkPdfSignature(
      sealed,
      trustAnchorsOnly(parseCertificates(seal.caCertificate)),
      new Date(Date.now() - 3_600_000),
    );
    expect(before.problems.join()).toMatch(/the signature time-stamp claims .* after the time of checking/);
  });
});

describe('the validation report, in ETSI EN 319 102-1’s terms', () => {
  const verdict = async (change: (d: ForgedDocument[]) => void, p = policy('warn')) => {
    const evidence = accepted(await judge(await forgeCompletedZip({ seal, transaction: tx, documents: docs(change) }), p));
    return evidence.documents[0]!.signature.validation;
  };

  it('TOTAL_PASSED at B-LTA with the time vouched for; each failure with its indication and sub-indication', async () => {
    expect(await verdict(() => undefined)).toMatchObject({ level: 'B-LTA', indication: 'TOTAL_PASSED', subIndication: null });
    expect(await verdict((d) => (d[0]!.sealed = false))).toMatchObject({
      level: null,
      indication: 'TOTAL_FAILED',
      subIndication: 'FORMAT_FAILURE',
    });
    expect(await verdict((d) => (d[0]!.tamper = (b) => Buffer.concat([b, Buffer.from('\n%%EOF\n')])))).toMatchObject({
      indication: 'TOTAL_FAILED',
      subIndication: 'FORMAT_FAILURE',
    });
    const flipped = await verdict(
      (d) =>
        (d[0]!.tamper = (b) => {
          const c = Buffer.from(b);
          c.writeUInt8(c.readUInt8(400) ^ 0x01, 400);
          return c;
        }),
    );
    expect(flipped).toMatchObject({ indication: 'TOTAL_FAILED' });
    expect(['HASH_FAILURE', 'SIG_CRYPTO_FAILURE']).toContain(flipped!.subIndication);
    const stranger = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-stranger-')));
    const untrusted = { ...policy('warn'), trust: trustAnchorsOnly(parseCertificates(stranger.caCertificate)) };
    expect(await verdict(() => undefined, untrusted)).toMatchObject({
      indication: 'INDETERMINATE',
      subIndication: 'NO_CERTIFICATE_CHAIN_FOUND',
    });
  });
});

describe('a B-LTA seal: only validation data and document time-stamps may follow it', () => {
  const anchors = () => parseCertificates(seal.caCertificate);
  const sealEnd = (pdf: Buffer) => pdf.indexOf('%%EOF') + 5;

  it('reaches B-LTA: the /DSS holds revocation data signed by the CA, and the document time-stamp holds', async () => {
    const sealed = await seal.seal(originals[0]!, 'x', new Date());
    const check = await checkPdfSignature(sealed, trustAnchorsOnly(anchors()), new Date());
    expect(check).toMatchObject({ problems: [], level: 'B-LTA', indication: 'TOTAL_PASSED', coversWholeFile: true });
    expect(check.archiveTimestamps).toHaveLength(1);
  });

  it('refuses an update after the seal that changes a page, however well-formed', async () => {
    const sealed = await seal.seal(originals[0]!, 'x', new Date());
    const page = (await PDFDocument.load(sealed)).getPage(0).ref.objectNumber;
    // Well-formed: its table places the object where it is written, and chains to the revision before it.
    const prev = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(sealed.toString('latin1'))![1];
    const object = `${page} 0 obj\n<< /Type /Page /Parent 1 0 R /MediaBox [0 0 10 10] >>\nendobj\n`;
    const xrefAt = sealed.length + 1 + object.length;
    const update = Buffer.from(
      `\n${object}xref\n0 1\n0000000000 65535 f \n${page} 1\n${String(sealed.length + 1).padStart(10, '0')} 00000 n \n` +
        `trailer\n<< /Size 40 /Root 2 0 R /Prev ${prev} >>\nstartxref\n${xrefAt}\n%%EOF\n`,
    );
    const check = await checkPdfSignature(Buffer.concat([sealed, update]), trustAnchorsOnly(anchors()), new Date());
    expect(check.problems.join()).toMatch(new RegExp(`an update after the seal changes object ${page}, which the seal covers`));
    expect(check).toMatchObject({ indication: 'TOTAL_FAILED', subIndication: 'FORMAT_FAILURE' });
  });

  it('refuses validation data changed under the document time-stamp', async () => {
    const sealed = Buffer.from(await seal.seal(originals[0]!, 'x', new Date()));
    // A hex digit of the first /DSS's VRI key, after the seal and before the document time-stamp: still well-formed.
    const at = sealed.indexOf('/VRI', sealEnd(sealed)) + '/VRI << /'.length;
    sealed.write(sealed.toString('latin1', at, at + 1) === 'A' ? 'B' : 'A', at, 'latin1');
    const check = await checkPdfSignature(sealed, trustAnchorsOnly(anchors()), new Date());
    expect(check.problems.join()).toMatch(/document time-stamp 1 is for other bytes than the ones its \/ByteRange names/);
    expect(check.level).not.toBe('B-LTA');
  });
});

describe('the sandbox’s certificates over the years', () => {
  it('renews the seal’s and the TSA’s certificates before they expire, keeping the old ones, and seals stay B-LTA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-renew-'));
    const first = await SandboxSeal.open(dir);
    // Two years and a half later: less than a year left on both.
    const later = new Date(Date.parse(first.certificate.notBefore) + 2.5 * 365 * 24 * 3600 * 1000);
    const renewed = await SandboxSeal.open(dir, { now: later });
    expect(renewed.certificate.sha256).not.toBe(first.certificate.sha256);
    expect(renewed.timestampAuthority.sha256).not.toBe(first.timestampAuthority.sha256);
    expect(Date.parse(renewed.certificate.notAfter)).toBeGreaterThan(later.getTime() + 2 * 365 * 24 * 3600 * 1000);
    expect(renewed.caCertificate).toBe(first.caCertificate);
    const retired = await readdir(join(dir, 'retired'));
    expect(retired.sort()).toEqual(
      [`seal-${first.certificate.serialNumber}.pem`, `tsa-${first.timestampAuthority.serialNumber}.pem`].sort(),
    );
    // Not due again: the next start keeps them.
    expect((await SandboxSeal.open(dir, { now: later })).certificate.sha256).toBe(renewed.certificate.sha256);
  });
});
