// Signers' progress and the integrator's events, end to end: the provider
// sandbox sends esign-participant-signed webhooks through the real bridge; the
// workflow tracks each participant and sends signed Standard Webhooks events
// to a real HTTP receiver that verifies them with the `standardwebhooks`
// library, as an integrator would.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverNotification } from '../../src/bridge/deliver.js';
import type { EsignParticipantWebhook, EsignWebhook } from '../../src/esign/schemas.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { EventReceiver } from '../support/event-receiver.js';
import { sandboxOwners } from '../support/bridge.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';

const oldSecret = `whsec_${randomBytes(24).toString('base64')}`;
const newSecret = `whsec_${randomBytes(24).toString('base64')}`;
let env: EsignTestEnv;
let receiver: EventReceiver;

beforeAll(async () => {
  // The receiver still holds the old secret while the worker signs with both (a rotation).
  receiver = await EventReceiver.start(oldSecret);
  env = await startEsignTestEnv({ bridge: true, deps: { callbackSecrets: [newSecret, oldSecret], allowedUrls: [receiver.server.url] } });
});
afterAll(async () => {
  await env?.close();
  await receiver?.close();
});

type Handle = Awaited<ReturnType<EsignTestEnv['start']>>['handle'];
const attribute = async (handle: Handle, name: string) =>
  (await handle.describe()).typedSearchAttributes.getAll().find((p) => p.key.name === name)?.value;

describe("signers' progress and the integrator's events", () => {
  it('tracks each participant, shows who it waits for, and sends each event once, signed, despite retries', async () => {
    receiver.failFirstAttempt = true; // every event is delivered twice: the first attempt gets a 503
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day', callbackUrl: receiver.url }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const [ada, alan] = status.participants;
    expect(status.summary).toBe('2 participant(s) to sign');

    await env.sandbox.control.signAs(status.transactionId!, ada!.id);
    // The webhook reaches the workflow, which reads the record and announces the signature.
    await expect.poll(() => receiver.of('participant.signed').length, { timeout: 20_000 }).toBe(1);
    const now = await handle.query(statusQuery);
    expect(now.participants.map((p) => p.status)).toEqual(['signed', 'pending']);
    expect(now.summary).toBe('1 of 2 signed; waiting for Alan Turing');
    expect(await attribute(handle, 'EsignSignedCount')).toBe(1);
    expect(await attribute(handle, 'EsignWaitingFor')).toEqual([alan!.id]);
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toBe('1 of 2 signed; waiting for Alan Turing');
    expect(receiver.of('participant.signed')[0]!.data).toMatchObject({
      referenceId: status.referenceId,
      transactionId: status.transactionId,
      participant: { id: ada!.id, name: 'Ada Lovelace' },
      signed: 1,
      of: 2,
    });

    await env.sandbox.control.signAs(status.transactionId!, alan!.id);
    const result = await handle.result();
    expect(result.status).toBe('completed');
    // The run ended with its outcome set; the event log delivers the outcome after it, in order.
    await expect
      .poll(() => receiver.events.map((e) => e.type), { timeout: 20_000 })
      .toEqual(['participant.signed', 'participant.signed', 'transaction.completed']);
    expect(receiver.events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    const completed = receiver.of('transaction.completed')[0]!;
    expect(completed.data).toMatchObject({
      status: 'completed',
      referenceId: status.referenceId,
      archive: { sha256: result.archive!.sha256 },
    });
    // Each event twice on the wire (one refused), once in effect; every signature verified with the old secret.
    expect(receiver.attempts).toBe(6);
    expect(receiver.rejected).toBe(0);
    expect(new Set(receiver.events.map((e) => e.id)).size).toBe(3);
    receiver.failFirstAttempt = false;
  });

  it('a participant event after the end changes nothing', async () => {
    const before = receiver.events.length;
    const { handle } = await env.start(env.input({ reconcileInterval: '1 day', callbackUrl: receiver.url }));
    const status = await waitForPhase(handle, 'awaiting_signatures');
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    await handle.result();
    await expect.poll(() => receiver.events.length - before, { timeout: 10_000 }).toBe(3);
    // A late copy of a participant webhook (a new notification) after the end: nothing more is sent.
    const deliveries = await env.sandbox.deliveries(status.transactionId!);
    expect(deliveries.map((d) => (JSON.parse(d.payload) as { event: string }).event)).toEqual(
      expect.arrayContaining(['esign-participant-signed', 'esign-completed']),
    );
    const signed = deliveries
      .map((d) => JSON.parse(d.payload) as EsignWebhook)
      .find((n): n is EsignParticipantWebhook => n.event === 'esign-participant-signed')!;
    // As the bridge delivers it: no running workflow owns it, so it is acknowledged as stale and signals nothing.
    const delivery = await deliverNotification(
      env.temporal.client,
      { ...signed, data: { ...signed.data, notificationId: randomUUID() } },
      { taskQueue: env.taskQueue, owners: sandboxOwners(env.sandbox) },
    );
    expect(delivery).toEqual({ route: 'stale', workflowId: handle.workflowId });
    await expect(env.temporal.client.workflow.getHandle(inboxIdFor(status.transactionId!)).describe()).rejects.toThrow();
    expect(receiver.events.length - before).toBe(3);
  });

  it('refuses a callbackUrl when the worker has no secret to sign with', async () => {
    const bare = await startEsignTestEnv({ deps: { allowedUrls: [receiver.server.url] } });
    try {
      const { handle } = await bare.start(bare.input({ callbackUrl: receiver.url }));
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: { type?: string; message?: string } },
      );
      expect(err?.cause).toMatchObject({ type: 'InvalidInput' });
      expect(err?.cause?.message).toMatch(/ESIGN_CALLBACK_SECRETS/);
    } finally {
      await bare.close();
    }
  });
});
