// Regression tests for the defects issue 23 named in the transaction workflow
// before it became one state machine. Each failed on that code (commit 5268040):
// the replace made a cancelled transaction signable again, and an invalid
// archive failed the workflow with no ending. (Defect 1, a cancel in the
// continue-as-new hand-over, needed an integrator event held by the run to open
// the window; since the event log delivers events, nothing a test can hold keeps
// it open: explore/regressions/cancel-during-continue-as-new.json keeps it, in
// test/explorer/explorer-regressions.test.ts.)
// Against the real dev server and the provider sandbox over HTTP.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { afterEach, expect, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { FailureType } from '../../src/failures.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { cancelUpdate, replaceTransactionUpdate, retryArchiveUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { eventually } from '../support/eventually.js';
import { gate } from '../support/gate.js';
import { waitForPhase, startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { createCertificateAuthority, parseCertificates } from '../../src/evidence/pki.js';
import { sandboxEvidencePolicy } from '../support/sandbox.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

let env: EsignTestEnv | undefined;
const release: (() => void)[] = [];
afterEach(async () => {
  for (const r of release.splice(0)) r();
  await env?.close();
  env = undefined;
});

const updateFailure = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  return (err as WorkflowUpdateFailedError).cause as { type?: string; message: string };
};

it('defect 3: a replace in flight when a cancel comes cannot make the cancelled transaction signable again', async () => {
  const replace = gate(release);
  env = await startEsignTestEnv({
    wrapActivities: (a) => ({
      ...a,
      async updateTransaction(input) {
        replace.arrive();
        await replace.wait;
        return a.updateTransaction(input);
      },
    }),
  });
  const { handle } = await env.start(env.input({ status: 'draft' }));
  const { transactionId } = await waitForPhase(handle, 'draft');
  const sent = handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] });
  await replace.reached;
  const cancelled = handle.executeUpdate(cancelUpdate, { args: [{ reason: 'wrong recipient' }] });
  // Time for a withdraw that did not wait to reach the provider before the replace does.
  await new Promise((r) => setTimeout(r, 1_500));
  replace.open();
  expect((await cancelled).status).toBe('cancelled');
  expect(await sent).toEqual({ status: 'esign_pending' });
  expect((await env.sandbox.client.getTransaction(transactionId!)).status).toBe('draft');
  // Once a cancel is under way, a new replace is refused by its validator.
  await expect(handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] })).rejects.toThrow();
});

it('defect 5: a refused archive waits for an operator, who fixes the trust anchor and retries', async () => {
  // The worker trusts another CA than the provider's: every seal is untrusted, the ZIP refused.
  const stranger = await createCertificateAuthority({ CN: 'Some other CA' });
  env = await startEsignTestEnv({
    deps: {
      evidence: {
        signatures: 'require',
        trust: trustAnchorsOnly(parseCertificates(stranger.certificate)),
        requireCompletionCertificate: true,
      },
    },
  });
  const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  const refused = await waitForPhase(handle, 'archive_invalid');
  expect(refused.archiveProblem).toMatch(/ArchiveInvalid/);
  expect(refused.summary).toMatch(/^Archive refused, waiting for an operator/);
  // Nothing else moves it: no cancel, and a retry on the same worker is refused again with the reason.
  await expect(handle.executeUpdate(cancelUpdate, { args: [{}] })).rejects.toThrow();
  const again = await updateFailure(handle.executeUpdate(retryArchiveUpdate));
  expect(again.type).toBe(FailureType.ArchiveInvalid);

  // The operator deploys the right trust anchor: a worker with it replaces the old one.
  env.worker.shutdown();
  const fixed: Worker = await createEsignWorker({
    connection: env.temporal.nativeConnection,
    namespace: env.temporal.namespace,
    taskQueue: env.taskQueue,
    deps: {
      client: env.sandbox.client,
      archive: new LocalArchiveStore(env.archiveDir),
      evidence: sandboxEvidencePolicy(env.sandbox),
      minReconcileInterval: '1 second',
    },
  });
  const result = await fixed.runUntil(async () => {
    await eventually('the old worker to stop', () => env!.worker.getState() === 'STOPPED');
    const archived = await handle.executeUpdate(retryArchiveUpdate);
    expect((await handle.query(statusQuery)).phase).toBe('completed');
    return archived;
  });
  expect(result.status).toBe('completed');
  expect(result.archive?.evidence).toBeDefined();
  expect(await handle.result()).toEqual(result);
});
