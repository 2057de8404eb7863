// Issue 37, end to end through a real worker and Temporal server: a transaction the provider completes with a seal
// the worker must not trust is parked in archive_invalid with the reason, never archived as verified.
import { afterEach, expect, it } from 'vitest';
import type { EvidencePolicy } from '../../src/archive/evidence.js';
import { providerTrust, trustAnchorsOnly } from '../../src/evidence/trust.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

let env: EsignTestEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** Starts a transaction, has every participant sign, and waits until the workflow has judged the completed ZIP. */
async function signedAndJudged(e: EsignTestEnv) {
  const { handle } = await e.start(e.input({ reconcileInterval: '1 second' }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await e.sandbox.control.signAs(status.transactionId!, p.id);
  return waitForPhase(handle, 'archive_invalid');
}

it('refuses a seal made with a key the worker has not pinned, though it chains to the trusted CA', async () => {
  // The worker trusts the sandbox's CA but pins another key: as if the seal came from another subscriber of that CA.
  const evidence: EvidencePolicy = { signatures: 'require', trust: trustAnchorsOnly([]), requireCompletionCertificate: true };
  env = await startEsignTestEnv({ deps: { evidence } });
  const elsewhere = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-e2e-other-')));
  const trusted = providerTrust(env.sandbox.running);
  evidence.trust = { ...trusted, seal: { anchors: trusted.seal.anchors, pins: providerTrust(elsewhere).seal.pins } };
  const refused = await signedAndJudged(env);
  expect(refused.archiveProblem).toMatch(/ArchiveInvalid/);
  expect(refused.archiveProblem).toMatch(/not one of the provider's pinned sealing keys/);
});

it('refuses what a revoked sealing certificate sealed: the provider’s own OCSP answer and CRL in the file say so', async () => {
  env = await startEsignTestEnv();
  // The provider's sealing key leaked and its CA revoked the certificate; the sandbox seals with it regardless.
  await env.sandbox.control.revokeSeal();
  const refused = await signedAndJudged(env);
  expect(refused.archiveProblem).toMatch(/ArchiveInvalid/);
  expect(refused.archiveProblem).toMatch(
    /the certificate "CN=esign sandbox document seal, O=esign sandbox" was revoked at \S+ \(keyCompromise\), before/,
  );
});
