// Trust per role and the trail bound to its transaction (issue 37): forgeries a review archived as verified,
// each refused with its reason under `require`, through the same checks the archive activity runs.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { evidenceCheck, type EvidencePolicy, type ExpectedCompletion } from '../../src/archive/evidence.js';
import { verifyZip } from '../../src/archive/zip-verify.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { renewalVerdict, renewEvidence } from '../../src/evidence/renewal.js';
import { providerTrust } from '../../src/evidence/trust.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { forgeCompletedZip, sha256 } from '../support/evidence.js';
import { anotherSubscriber, issueTlsServerCertificate, sealWithOtherIdentity } from '../support/forged-identities.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';

let genuineDir: string;
let genuine: SandboxSeal;
let original: Buffer;
const tx = { id: 'tx-37', esignId: 'es-37' };

beforeAll(async () => {
  genuineDir = await mkdtemp(join(tmpdir(), 'esign-trust-seal-'));
  genuine = await SandboxSeal.open(genuineDir);
  original = Buffer.from(await samplePdf('Severance agreement'));
});

const policy = (): EvidencePolicy => ({ signatures: 'require', trust: providerTrust(genuine), requireCompletionCertificate: true });
const completion = (over: Partial<ExpectedCompletion> = {}): ExpectedCompletion => ({
  transactionId: tx.id,
  esignId: tx.esignId,
  documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf', sha256: sha256(original) }],
  ...over,
});

/** The archive's verdict on a ZIP: what it records, or why it refuses. */
async function judge(zip: Buffer, expected = completion()): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'esign-trust-zip-')), 'completed.zip');
  await writeFile(file, zip);
  const check = evidenceCheck(expected, policy());
  try {
    check.conclude(await verifyZip(file, undefined, check.inspector));
    return 'archived';
  } catch (err) {
    return (err as Error).message;
  }
}

const zipBy = (seal: SandboxSeal, transaction = tx) =>
  forgeCompletedZip({ seal, transaction, documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf', original }] });

describe('the provider’s seal, pinned', () => {
  it('archives the genuine ZIP: sealed with the pinned key, under the pinned CA', async () => {
    expect(await judge(await zipBy(genuine))).toBe('archived');
  });

  it('refuses a whole ZIP forged with a TLS server certificate the trusted CA issued (documents, certificate of completion, trail with our real hashes)', async () => {
    const forger = await sealWithOtherIdentity(genuineDir, (ca) => issueTlsServerCertificate(ca));
    const verdict = await judge(await zipBy(forger));
    expect(verdict).toMatch(/is not one of the provider's pinned sealing keys \(ESIGN_SEAL_PINS\)/);
  });

  it('refuses a ZIP sealed by another subscriber of the same CA with a document-signing certificate of the same profile', async () => {
    const forger = await sealWithOtherIdentity(genuineDir, anotherSubscriber);
    const pdf = await forger.seal(original, 'forged', new Date());
    const check = await checkPdfSignature(pdf, providerTrust(genuine), new Date());
    expect(check).toMatchObject({ indication: 'INDETERMINATE', subIndication: 'CHAIN_CONSTRAINTS_FAILURE', trusted: false });
    expect(check.problems.join()).toContain(forger.sealPins[0]);
    expect(await judge(await zipBy(forger))).toMatch(/pinned sealing keys/);
  });

  it('accepts a seal by either key during a rotation: the old one and the new one both pinned', async () => {
    const next = await sealWithOtherIdentity(genuineDir, anotherSubscriber);
    const both = {
      ...providerTrust(genuine),
      seal: { ...providerTrust(genuine).seal, pins: [...providerTrust(genuine).seal.pins, ...providerTrust(next).seal.pins] },
    };
    const pdf = await next.seal(original, 'rotated', new Date());
    expect((await checkPdfSignature(pdf, both, new Date())).problems).toEqual([]);
  });
});

describe('the evidence upkeep, with the same checks', () => {
  it('refuses to renew a seal the archive would refuse: another subscriber’s, though it chains to the CA', async () => {
    const forger = await sealWithOtherIdentity(genuineDir, anotherSubscriber);
    const pdf = await forger.seal(original, 'forged', new Date());
    const policy = { trust: providerTrust(genuine), horizonMs: 10 * 365 * 24 * 3600 * 1000 };
    const verdict = await renewalVerdict(pdf, policy, new Date());
    expect(verdict.due).toBe('lapsed');
    expect(verdict.due === 'lapsed' && verdict.problems.join()).toMatch(/pinned sealing keys/);
    const sources = { timestampAuthority: { timestamp: () => Promise.reject(new Error('not asked')) }, revocationProvider: {} };
    await expect(renewEvidence(pdf, sources, policy, new Date())).rejects.toThrow(/the evidence does not hold .* pinned sealing keys/);
  });
});

describe('the audit trail, bound to its transaction', () => {
  it('refuses a genuine ZIP of another transaction with the same upload path and hash', async () => {
    const other = await zipBy(genuine, { id: 'tx-other', esignId: 'es-other' });
    expect(await judge(other)).toMatch(/audit-trail\.json is the record of transaction tx-other, not of tx-37/);
  });

  it('refuses a genuine ZIP whose esignId is another', async () => {
    const other = await zipBy(genuine, { id: tx.id, esignId: 'es-other' });
    expect(await judge(other)).toMatch(/record of esignId es-other, not of es-37/);
  });

  it('refuses a trail that does not end in completion, or records a decline', async () => {
    const declined = await forgeCompletedZip({
      seal: genuine,
      transaction: tx,
      documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf', original }],
      alterTrail: (t) => ({ ...t, events: [...t.events, { ...t.events.at(-1)!, seq: t.events.length + 1, type: 'declined' }] }),
    });
    const verdict = await judge(declined);
    expect(verdict).toMatch(/does not end in completion \(its last event is declined\)/);
    expect(verdict).toMatch(/records a decline/);
  });

  it('refuses a trail whose seal names another certificate than the one that sealed', async () => {
    const renamed = await forgeCompletedZip({
      seal: genuine,
      transaction: tx,
      documents: [{ title: 'Contract', StoragePath: 'uploads/contract.pdf', original }],
      alterTrail: (t) => ({ ...t, seal: { ...t.seal, sha256: '0'.repeat(64) } }),
    });
    expect(await judge(renamed)).toMatch(/names the seal 0{64}, but 2 PDF\(s\) are sealed by another certificate/);
  });

  it('refuses a trail whose participants are not the ones the workflow created', async () => {
    expect(await judge(await zipBy(genuine), completion({ participantIds: ['p-1'] }))).toMatch(
      /lists 0 participant\(s\) that are not this transaction's 1/,
    );
  });
});
