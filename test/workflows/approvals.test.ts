// Approvals before sending, through the real stack (the dev server, a worker, the sandbox over HTTP and a receiver of
// the integrator's events): a 2-of-3 quorum sends the transaction only at the second approval, and its signers then
// sign it to an archive that keeps the approvers' answers; one rejection ends it `rejected` and nothing is ever sent;
// approvers' reminders, then their deadline, end it `expired`; a cancel while it awaits approval; every refusal.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { failureTypeOf } from '../../src/client/failures.js';
import {
  approveEsignTransaction,
  cancelEsignTransaction,
  correctEsignTransaction,
  InvalidApproval,
  issueSigningUrl,
  rejectEsignTransaction,
} from '../../src/client/transactions.js';
import { approveUpdate, esignEventSignal, rejectUpdate, replaceTransactionUpdate, statusQuery } from '../../src/definitions/transaction.js';
import type { ApprovalInput } from '../../src/transaction/input.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { EventReceiver } from '../support/event-receiver.js';
import { recordHistory } from '../support/record-history.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let env: EsignTestEnv;
let receiver: EventReceiver;
/** Provider reads of these transactions answer only after the given time: a provider slow across a deadline. */
const slowReads = new Map<string, number>();
/** Withdraws of these transactions are refused, the provider not saying how it stands. */
const refusedWithdraws = new Set<string>();
/** Withdraws asked, by transaction. */
const withdraws = new Map<string, number>();
beforeAll(async () => {
  receiver = await EventReceiver.start(secret);
  env = await startEsignTestEnv({
    bridge: true,
    deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] },
    wrapActivities: (a) => ({
      ...a,
      async getTransactionStatus(transactionId) {
        const until = slowReads.get(transactionId);
        if (until !== undefined && Date.now() < until) await new Promise((r) => setTimeout(r, until - Date.now()));
        return a.getTransactionStatus(transactionId);
      },
      async withdrawTransaction(input) {
        withdraws.set(input.transactionId, (withdraws.get(input.transactionId) ?? 0) + 1);
        if (refusedWithdraws.has(input.transactionId)) return { withdrawn: false };
        return a.withdrawTransaction(input);
      },
    }),
  });
}, 60_000);
afterAll(async () => {
  await env?.close();
  await receiver?.close();
});

const BOARD: ApprovalInput['approvers'] = [
  { id: 'cfo', name: 'Chief Financial Officer' },
  { id: 'legal' },
  { id: 'ops', name: 'Operations' },
];

async function started(approval: ApprovalInput, overrides: Parameters<EsignTestEnv['input']>[0] = {}) {
  const input = env.input({ callbackUrl: receiver.url, approval, ...overrides });
  // As a bulk send's row: its archive names the batch, which a legal hold may keep (docs/records.md).
  const { handle } = await env.start(input, { batchId: 'batch-approvals' });
  const status = await waitForPhase(handle, 'awaiting_approval');
  const events = (type: string) => receiver.of(type).filter((e) => e.data.referenceId === input.referenceId);
  const approve = (approverId: string, comment?: string) =>
    approveEsignTransaction(env.temporal.client, input.referenceId, { approverId, ...(comment ? { comment } : {}) });
  const reject = (approverId: string, reason: string) =>
    rejectEsignTransaction(env.temporal.client, input.referenceId, { approverId, reason });
  return { input, handle, status, transactionId: status.transactionId!, esignId: status.esignId!, events, approve, reject };
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err: unknown) => failureTypeOf(err) ?? ((err as { cause?: Error }).cause ?? (err as Error)).message,
  );

// Each test has transactions of its own (the doubles above key on them, the receiver's events are read by reference):
// they run side by side, as most of their time is waiting on deadlines and reminders. Side by side, an event reaches
// the receiver later than it would alone: each wait for one allows as long as the file's other waits.
describe.concurrent('approvals before sending', () => {
  it('a 2-of-3 quorum sends it at the second approval; its signers sign; the archive keeps the answers', async ({ expect }) => {
    const { input, handle, status, transactionId, events, approve } = await started({ approvers: BOARD, quorum: 2 });
    // A draft at the provider, which no signer can open, until the quorum approves.
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('draft');
    expect(status.approval).toMatchObject({ state: 'pending', quorum: 2, approvers: [{ id: 'cfo' }, { id: 'legal' }, { id: 'ops' }] });
    const [ada, alan] = status.participants.map((p) => p.id) as [string, string];
    expect(await refusal(issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: [ada] }))).toContain('awaits approval');
    expect(await refusal(handle.executeUpdate(replaceTransactionUpdate, { args: [{ status: 'esign_pending' }] }))).toContain(
      'awaits approval',
    );
    expect(
      await refusal(
        correctEsignTransaction(env.temporal.client, input.referenceId, { kind: 'resend', by: 'ops:jane', participantId: ada }),
      ),
    ).toContain('awaits approval');
    await expect.poll(() => events('approval.requested'), { timeout: 20_000 }).toHaveLength(1);
    expect(events('approval.requested')[0]!.data).toMatchObject({ quorum: 2, approvals: 0, reminder: 0, waitingFor: BOARD });

    const first = await approve('cfo', 'budget checked');
    expect(first).toMatchObject({
      approverId: 'cfo',
      decision: 'approved',
      comment: 'budget checked',
      approvals: 1,
      quorum: 2,
      outcome: 'pending',
    });
    expect(await refusal(approve('cfo'))).toContain('already approved');
    expect(await refusal(approve('mallory'))).toContain('mallory is not an approver');
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('draft');

    const second = await approve('legal');
    expect(second).toMatchObject({ approvals: 2, outcome: 'sending' });
    // Asked at once, a signing URL waits for the send rather than being refused.
    const { url } = await issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: [ada] });
    expect((await fetch(url)).status).toBe(200);
    expect((await handle.query(statusQuery)).phase).toBe('awaiting_signatures');
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('esign_pending');
    expect(await refusal(approve('ops'))).toContain('it no longer awaits approval');
    expect((await handle.query(statusQuery)).approval).toMatchObject({ state: 'approved' });

    await env.sandbox.control.signAs(transactionId, ada);
    await env.sandbox.control.signAs(transactionId, alan);
    const end = await handle.result();
    expect(end.status).toBe('completed');
    await recordHistory(handle, 'approval-quorum-then-signed.json');
    const archived = await new LocalArchiveStore(env.archiveDir).find(transactionId);
    expect(archived?.manifest.batchId).toBe('batch-approvals');
    expect(archived?.manifest.approvals).toEqual([
      expect.objectContaining({ approverId: 'cfo', name: 'Chief Financial Officer', decision: 'approved', comment: 'budget checked' }),
      expect.objectContaining({ approverId: 'legal', decision: 'approved' }),
    ]);
    await expect
      .poll(() => events('approval.given').map((e) => (e.data.approval as { approverId: string }).approverId), { timeout: 20_000 })
      .toEqual(['cfo', 'legal']);
  });

  it('one rejection ends it rejected, with its reason, and it is never sent', async ({ expect }) => {
    const { handle, transactionId, events, approve, reject } = await started({ approvers: BOARD, quorum: 2 });
    await approve('ops');
    // The client refuses a rejection without its reason; another SDK's is refused by the workflow.
    await expect(reject('legal', ' ')).rejects.toBeInstanceOf(InvalidApproval);
    expect(await refusal(handle.executeUpdate(rejectUpdate, { args: [{ approverId: 'legal' } as never] }))).toContain(
      'reason must say why',
    );
    const answer = await reject('legal', 'clause 7 is not what we agreed');
    expect(answer).toMatchObject({ decision: 'rejected', outcome: 'rejected', approvals: 1 });
    const end = await handle.result();
    expect(end).toMatchObject({
      status: 'rejected',
      endedBy: 'approver',
      reason: 'clause 7 is not what we agreed',
      rejectedBy: { approverId: 'legal' },
    });
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('draft');
    expect(await refusal(approve('cfo'))).toMatch(/rejected|closed|completed/i);
    await recordHistory(handle, 'approval-rejected.json');
    await expect.poll(() => events('transaction.rejected'), { timeout: 20_000 }).toHaveLength(1);
    expect(events('approval.rejected')[0]!.data.approval).toMatchObject({ approverId: 'legal', comment: 'clause 7 is not what we agreed' });
  });

  it("approvers' reminders, then their deadline, end it expired; a cancel while it awaits approval ends it cancelled", async ({
    expect,
  }) => {
    const late = await started({
      approvers: BOARD.slice(0, 2),
      deadline: '5 seconds',
      reminders: { firstAfter: '1 second', every: '1 second', maxCount: 2 },
    });
    await late.approve('cfo');
    const end = await late.handle.result();
    expect(end).toMatchObject({ status: 'expired', endedBy: 'deadline', reason: 'approval deadline passed with 1 of 2 approvals' });
    const asked = late.events('approval.requested');
    expect(asked.map((e) => e.data.reminder)).toEqual([0, 1, 2]);
    // Reminders name only who has not answered.
    expect(asked.at(-1)!.data.waitingFor).toEqual([{ id: 'legal' }]);
    expect((await env.sandbox.client.getTransaction(late.transactionId)).status).toBe('draft');
    await recordHistory(late.handle, 'approval-reminded-then-expired.json');

    // An approval sent while the draft is being created is answered once it exists.
    const early = env.input({ callbackUrl: receiver.url, approval: { approvers: BOARD, quorum: 1 } });
    const { handle: earlyHandle } = await env.start(early);
    expect(await approveEsignTransaction(env.temporal.client, early.referenceId, { approverId: 'ops' })).toMatchObject({
      outcome: 'sending',
    });
    await waitForPhase(earlyHandle, 'awaiting_signatures');
    await earlyHandle.terminate('test over');

    const cancelled = await started({ approvers: BOARD, quorum: 1 });
    const result = await cancelEsignTransaction(env.temporal.client, cancelled.input.referenceId, 'no longer needed');
    expect(result).toMatchObject({ status: 'cancelled', endedBy: 'request' });
    expect(await refusal(cancelled.handle.executeUpdate(approveUpdate, { args: [{ approverId: 'cfo' }] }))).not.toBe('accepted');
    expect((await env.sandbox.client.getTransaction(cancelled.transactionId)).status).toBe('draft');
  });

  it('an approval given before a hand-over to a new run counts after it', async ({ expect }) => {
    const { input, handle, transactionId, approve } = await started({ approvers: BOARD }, { maxHistoryEvents: 100 });
    await approve('cfo');
    const firstRun = (await handle.describe()).runId;
    // Refused notifications grow the history without waking the loop; the next answer wakes it past the bound.
    for (let i = 0; i < 60 && (await handle.describe()).historyLength < 104; i++) await handle.signal(esignEventSignal, 'garbage' as never);
    expect(await approve('legal')).toMatchObject({ approvals: 2, outcome: 'pending' });
    await expect.poll(async () => (await handle.describe()).runId, { timeout: 20_000 }).not.toBe(firstRun);
    await recordHistory(env.temporal.client.workflow.getHandle(handle.workflowId, firstRun), 'approval-handed-over.json');
    expect((await handle.query(statusQuery)).approval?.approvers.find((a) => a.id === 'cfo')).toMatchObject({ decision: 'approved' });
    expect(await refusal(approve('cfo'))).toContain('already approved');
    expect(await approve('ops')).toMatchObject({ approvals: 3, outcome: 'sending' });
    const { url } = await issueSigningUrl(env.temporal.client, input.referenceId, {
      participantIds: [(await handle.query(statusQuery)).participants[0]!.id],
    });
    expect(url).toMatch(/^http/);
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('esign_pending');
    await handle.terminate('test over');
  });

  it('refuses an approval input that cannot work, saying why', async ({ expect }) => {
    const refused = async (approval: unknown, extra: Record<string, unknown> = {}) => {
      const input = env.input({ callbackUrl: receiver.url, approval: approval as ApprovalInput, ...extra });
      return refusal(env.start(input));
    };
    expect(await refused({ approvers: BOARD, quorum: 4 })).toContain('a quorum of 4 needs as many approvers');
    expect(await refused({ approvers: [{ id: 'cfo' }, { id: 'cfo' }] })).toContain('duplicate approver id');
    expect(await refused({ approvers: [{ id: 'ada@example.com' }] })).toContain('not an e-mail address');
    expect(await refused({ approvers: BOARD }, { status: 'draft' })).toContain('status draft cannot take approvers');
    expect(await refused({ approvers: BOARD, deadline: '40 days' })).toContain('before the signing deadline');
    expect(await refused({ approvers: BOARD, reminders: { firstAfter: '1 hour', every: '1 hour' } }, { callbackUrl: undefined })).toContain(
      'give one',
    );
    // A deadline that passed at the start, whatever its unit.
    expect(await refused({ approvers: BOARD, deadline: '0 seconds' })).toContain('longer than zero');
    // Names reach terminals, events and the manifest: nothing that moves a cursor or reorders what a reader sees.
    expect(await refused({ approvers: [{ id: 'cfo', name: 'Chief\u001b[2J Officer' }] })).toContain('without control characters');
    expect(await refused({ approvers: [{ id: 'cfo', name: 'Chief \u202eOfficer' }] })).toContain('bidirectional');
    // A signing URL asked with the start of a transaction that must be approved first: refused before anything starts.
    const input = env.input({ callbackUrl: receiver.url, approval: { approvers: BOARD, quorum: 1 } });
    expect(await refusal(env.start(input, { signingUrlFor: { participantIds: ['ada'] } }))).toContain(
      'signingUrlFor cannot come with approval',
    );
    const described = env.temporal.client.workflow.getHandle(`esign-${input.referenceId}`).describe();
    await expect(described).rejects.toThrow(/not found/i);
  });

  it('an answer another SDK shapes wrongly is refused with its reason, never read as something else, and the run goes on', async ({
    expect,
  }) => {
    const { input, handle } = await started({ approvers: BOARD, quorum: 3 });
    const send = (update: typeof approveUpdate | typeof rejectUpdate, arg: unknown) =>
      refusal(handle.executeUpdate(update as typeof approveUpdate, { args: [arg as never] }));
    // A rejection's field in an approval is neither its comment nor dropped, whatever its value.
    expect(await send(approveUpdate, { approverId: 'cfo', reason: 42 })).toContain('approve takes approverId and comment, not reason');
    expect(await send(approveUpdate, { approverId: 'cfo', reason: 'y'.repeat(5_000) })).toContain('not reason');
    expect(await send(rejectUpdate, { approverId: 'cfo', reason: 'no', comment: 7 })).toContain('reject takes approverId and reason');
    expect(await send(approveUpdate, { approverId: 'cfo', comment: 'x'.repeat(5_000) })).toContain('at most 1000');
    expect(await send(approveUpdate, { approverId: 'cfo', comment: 'fine\u001b[2J' })).toContain('without control characters');
    expect(await send(rejectUpdate, { approverId: 'cfo', reason: '\u202eevil' })).toContain('bidirectional');
    await expect(
      approveEsignTransaction(env.temporal.client, input.referenceId, { approverId: 'cfo', comment: 'ok\u0007' }),
    ).rejects.toBeInstanceOf(InvalidApproval);
    const notIds = [
      null,
      'cfo',
      { approverId: 42 },
      { approverId: 'ada@example.com' },
      { approverId: '__proto__' },
      { approverId: 'z'.repeat(200_000) },
    ];
    for (const arg of notIds) expect(await send(approveUpdate, arg)).toMatch(/approverId must name|an answer is an object/);
    // A field left unset, written as null by an SDK, is no field at all: the comment is kept.
    expect(await send(approveUpdate, { approverId: 'legal', comment: 'budget checked', reason: null })).toBe('accepted');
    // Two answers by one approver at once: one is taken.
    const both = await Promise.all([
      refusal(approveEsignTransaction(env.temporal.client, input.referenceId, { approverId: 'ops' })),
      refusal(approveEsignTransaction(env.temporal.client, input.referenceId, { approverId: 'ops' })),
    ]);
    expect(both.filter((x) => x === 'accepted')).toHaveLength(1);
    const status = await handle.query(statusQuery);
    expect(status.approval?.approvers).toEqual([
      { id: 'cfo', name: 'Chief Financial Officer' },
      expect.objectContaining({ id: 'legal', decision: 'approved' }),
      expect.objectContaining({ id: 'ops', decision: 'approved' }),
    ]);
    // The run was never stuck: a cancel is taken, and the approval then says it ended undecided.
    expect(await cancelEsignTransaction(env.temporal.client, input.referenceId, 'test over')).toMatchObject({ status: 'cancelled' });
    expect((await handle.query(statusQuery)).approval).toMatchObject({ state: 'ended' });
  });

  it('a signing deadline passing with the approval deadline ends the draft unsent: never withdrawn, overdue or signable', async ({
    expect,
  }) => {
    // The provider answers a read only after both deadlines and would refuse the withdraw: the loop comes back to a
    // draft past both, and acts on its approvals first.
    const { input, handle, transactionId, esignId, status } = await started(
      { approvers: BOARD, quorum: 2, deadline: '4 seconds' },
      { signingDeadline: '6 seconds' },
    );
    slowReads.set(transactionId, Date.parse(status.deadline!) + 1_500);
    refusedWithdraws.add(transactionId);
    await handle.signal(esignEventSignal, completedWebhook({ transactionId, esignId }));
    const end = await handle.result();
    expect({ status: end.status, reason: end.reason, withdraws: withdraws.get(transactionId) ?? 0 }).toEqual({
      status: 'expired',
      reason: 'approval deadline passed with 0 of 2 approvals',
      withdraws: 0,
    });
    expect((await handle.query(statusQuery)).approval).toMatchObject({ state: 'expired' });
    const ada = status.participants[0]!.id;
    expect(await refusal(issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: [ada] }))).not.toBe('accepted');
    expect((await env.sandbox.client.getTransaction(transactionId)).status).toBe('draft');
    await recordHistory(handle, 'approval-deadlines-together.json');
  });
});
