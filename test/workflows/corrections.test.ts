// Corrections in flight through the real stack (the dev server, a worker, the sandbox over HTTP, the bridge and a
// receiver of the integrator's events): a wrong e-mail corrected after one signer signed, the link sent to it dead and
// the new address signing; signers removed and added; a deadline brought forward, which the waiting loop honours; a
// resend's fresh URL; refusals with their reason; and a correction the provider refuses, which changes nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { failureTypeOf } from '../../src/client/failures.js';
import { correctEsignTransaction, InvalidCorrection, issueSigningUrl } from '../../src/client/transactions.js';
import type { TransactionCorrection } from '../../src/definitions/corrections.js';
import { correctTransactionUpdate, esignEventSignal, statusQuery } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { EventReceiver } from '../support/event-receiver.js';
import { recordHistory } from '../support/record-history.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let env: EsignTestEnv;
let receiver: EventReceiver;
beforeAll(async () => {
  receiver = await EventReceiver.start(secret);
  env = await startEsignTestEnv({ bridge: true, deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] } });
}, 60_000);
afterAll(async () => {
  await env?.close();
  await receiver?.close();
});

const BY = 'ops:jane';
async function started(overrides: Parameters<EsignTestEnv['input']>[0] = {}) {
  const input = env.input({ callbackUrl: receiver.url, ...overrides });
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  const [ada, alan] = status.participants.map((p) => p.id) as [string, string];
  const correct = (c: TransactionCorrection) => correctEsignTransaction(env.temporal.client, input.referenceId, c);
  return { input, handle, transactionId: status.transactionId!, ada, alan, correct };
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    // A validator's refusal is the update's failure, with the reason as its cause.
    (err: unknown) => failureTypeOf(err) ?? ((err as { cause?: Error }).cause ?? (err as Error)).message,
  );

// Each test has a transaction of its own: they run side by side, as most of their time is waiting on deadlines and
// reminders; but the one that drops every webhook of the sandbox runs alone. Side by side, a webhook or an event is
// answered later than alone: each wait for one allows as long as the file's other waits.
describe.concurrent('corrections in flight', () => {
  it('a wrong e-mail corrected after a signature: the old link dies, the new address signs, the integrator hears it', async ({
    expect,
  }) => {
    const { input, handle, transactionId, ada, alan, correct } = await started();
    const { url: oldLink } = await issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: [alan] });
    await env.sandbox.control.signAs(transactionId, ada);
    await expect
      .poll(async () => (await handle.query(statusQuery)).participants.find((p) => p.id === ada)?.status, { timeout: 20_000 })
      .toBe('signed');

    const result = await correct({
      kind: 'contact',
      by: BY,
      reason: 'typo in the address',
      participantId: alan,
      email: 'alan.turing@example.com',
    });
    expect(result.removed).toEqual({ id: alan, name: 'Alan Turing' });
    const newAlan = result.added!.id;
    expect(newAlan).not.toBe(alan);
    // The link sent to the wrong address no longer opens; the corrected participant is who the transaction waits for.
    expect((await fetch(oldLink)).status).toBeGreaterThanOrEqual(400);
    const status = await handle.query(statusQuery);
    expect(status.participants.map((p) => p.id)).toEqual([ada, newAlan]);
    const record = await env.sandbox.client.getTransaction(transactionId);
    expect(record.participants.find((p) => p.id === newAlan)?.email).toBe('alan.turing@example.com');

    await env.sandbox.control.signAs(transactionId, newAlan);
    const end = await handle.result();
    expect(end.status).toBe('completed');
    expect(end.archive?.files.length).toBeGreaterThan(0);
    await recordHistory(handle, 'correction-contact-after-signature.json');
    // The archive keeps our record of what was asked beside the provider's audit trail.
    const archived = await new LocalArchiveStore(env.archiveDir).find(transactionId);
    expect(archived?.manifest.corrections).toEqual([expect.objectContaining({ kind: 'contact', by: BY, added: result.added })]);
    await expect
      .poll(() => receiver.of('transaction.corrected').filter((e) => e.data.referenceId === input.referenceId), { timeout: 20_000 })
      .toHaveLength(1);
    const [event] = receiver.of('transaction.corrected').filter((e) => e.data.referenceId === input.referenceId);
    expect(event!.data.correction).toMatchObject({
      kind: 'contact',
      by: BY,
      reason: 'typo in the address',
      removed: { id: alan },
      added: { id: newAlan, name: 'Alan Turing' },
    });
  });

  it('removes a signer and adds another, who signs in their place', async ({ expect }) => {
    const { handle, transactionId, ada, alan, correct } = await started();
    const removed = await correct({ kind: 'removeSigner', by: BY, participantId: alan });
    expect(removed.removed?.id).toBe(alan);
    const grace = randomUUID();
    const added = await correct({
      kind: 'addSigner',
      by: BY,
      participant: {
        id: grace,
        email: 'grace@example.com',
        firstName: 'Grace',
        lastName: 'Hopper',
        authenticationType: 'none',
        twoFactorContact: 'email',
      },
      tags: [{ document: 0, type: 'SIGNATURETEMPLATE', x: 330, y: 120, width: 200, height: 30, page: 0 }],
    });
    expect(added.added).toEqual({ id: grace, name: 'Grace Hopper' });
    expect((await handle.query(statusQuery)).participants.map((p) => p.id)).toEqual([ada, grace]);
    await env.sandbox.control.signAs(transactionId, ada);
    await env.sandbox.control.signAs(transactionId, grace);
    expect((await handle.result()).status).toBe('completed');
    await recordHistory(handle, 'correction-remove-then-add.json');
  });

  it('a deadline brought forward ends the transaction then, and a resend gives a fresh link', async ({ expect }) => {
    const { input, handle, alan, correct } = await started({ signingDeadline: '1 hour' });
    const resent = await correct({ kind: 'resend', by: BY, participantId: alan });
    const page = await fetch(resent.url!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Alan Turing');

    const at = new Date(Date.now() + 3_000).toISOString();
    const moved = await correct({ kind: 'deadline', by: BY, deadline: at });
    expect(moved.deadline?.to).toBe(at);
    const end = await handle.result();
    expect(end).toMatchObject({ status: 'expired', endedBy: 'deadline' });
    await recordHistory(handle, 'correction-resend-then-deadline-sooner.json');
    const corrected = receiver.of('transaction.corrected').filter((e) => e.data.referenceId === input.referenceId);
    expect(corrected.map((e) => (e.data.correction as { kind: string }).kind)).toEqual(['resend', 'deadline']);
  });

  // Found by a cold attack: the flag that replans the wait was work in every wait, and spun the loop where the wait
  // is not the one that clears it (the hand-over's, a reminder round's).
  it('a deadline moved when the history is full hands over; one moved while reminders are due lets them go out', async ({ expect }) => {
    const full = await started({ maxHistoryEvents: 100 });
    // Refused notifications grow the history without waking the loop.
    for (let i = 0; i < 60 && (await full.handle.describe()).historyLength < 104; i++)
      await full.handle.signal(esignEventSignal, 'garbage' as never);
    const firstRun = (await full.handle.describe()).runId;
    await full.correct({ kind: 'deadline', by: BY, deadline: new Date(Date.now() + 3_600_000).toISOString() });
    await expect.poll(async () => (await full.handle.describe()).runId, { timeout: 20_000 }).not.toBe(firstRun);
    const history = await env.temporal.client.workflow.getHandle(full.handle.workflowId, firstRun).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);

    const { input, alan, correct, handle } = await started({ reminders: { firstAfter: '2 seconds', every: '2 seconds', maxCount: 2 } });
    const mine = () => receiver.of('reminder.due').filter((e) => e.data.referenceId === input.referenceId);
    await expect.poll(mine, { timeout: 20_000 }).toHaveLength(4);
    // A resend plans the reminders again from the first, and its round goes out with keys of its own.
    await correct({ kind: 'resend', by: BY, participantId: alan });
    await expect.poll(mine, { timeout: 20_000 }).toHaveLength(8);
    expect(new Set(mine().map((e) => e.id)).size).toBe(8);
    await correct({ kind: 'deadline', by: BY, deadline: new Date(Date.now() + 1_800_000).toISOString() });
    const markers = async () => ((await handle.fetchHistory()).events ?? []).filter((e) => e.markerRecordedEventAttributes).length;
    const before = await markers();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    // No busy loop of provider reads: a handful of local activities at most in two seconds.
    expect((await markers()) - before).toBeLessThan(10);
    await handle.terminate('test over');
    await full.handle.terminate('test over');
  });

  it(
    'a removal from a stale view that would leave nothing to sign is refused by the provider',
    { concurrent: false },
    async ({ expect }) => {
      const { transactionId, ada, alan, correct, handle } = await started({ signingDeadline: '1 hour' });
      await env.sandbox.control.setFaults({ dropWebhookRate: 1 });
      try {
        await env.sandbox.control.signAs(transactionId, ada);
        expect(await refusal(correct({ kind: 'removeSigner', by: BY, participantId: alan }))).toBe(FailureType.ProviderRejected);
      } finally {
        await env.sandbox.control.setFaults({});
      }
      expect((await env.sandbox.client.getTransaction(transactionId)).participants.map((p) => p.id)).toEqual([ada, alan]);
      await env.sandbox.control.signAs(transactionId, alan);
      expect((await handle.result()).status).toBe('completed');
    },
  );

  it('refuses what cannot be corrected, with the reason, and a correction the provider refuses changes nothing', async ({ expect }) => {
    const { handle, transactionId, ada, alan, correct } = await started();
    await env.sandbox.control.signAs(transactionId, ada);
    await expect
      .poll(async () => (await handle.query(statusQuery)).participants.find((p) => p.id === ada)?.status, { timeout: 20_000 })
      .toBe('signed');

    expect(await refusal(correct({ kind: 'contact', by: BY, participantId: ada, email: 'ada@elsewhere.example' }))).toContain(
      `participant ${ada} has signed`,
    );
    expect(await refusal(correct({ kind: 'resend', by: BY, participantId: randomUUID() }))).toContain('unknown participant');
    expect(await refusal(correct({ kind: 'deadline', by: BY, deadline: new Date(Date.now() - 60_000).toISOString() }))).toContain(
      'deadline must be in the future',
    );
    expect(await refusal(correct({ kind: 'removeSigner', by: BY, participantId: alan }))).toContain('the last one still to sign');
    await expect(correct({ kind: 'resend', by: '', participantId: alan })).rejects.toBeInstanceOf(InvalidCorrection);

    // Sent as another SDK would, past the client's check: the workflow lets it through, the provider refuses the
    // address, and the workflow's view is as before.
    const direct = handle.executeUpdate(correctTransactionUpdate, {
      args: [{ kind: 'contact', by: BY, participantId: alan, email: 'alan@localhost' }],
    });
    expect(await refusal(direct)).toBe(FailureType.ProviderRejected);
    expect((await handle.query(statusQuery)).participants.map((p) => p.id)).toEqual([ada, alan]);
    await env.sandbox.control.signAs(transactionId, alan);
    expect((await handle.result()).status).toBe('completed');
    await recordHistory(handle, 'correction-refused-by-provider.json');
  });
});
