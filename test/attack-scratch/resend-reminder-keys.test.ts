// After a resend resets the reminder count, the next reminders reuse the keys of the first ones: the event log drops them.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { correctEsignTransaction } from '../../src/client/transactions.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { EventReceiver } from '../support/event-receiver.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let env: EsignTestEnv;
let receiver: EventReceiver;
beforeAll(async () => {
  receiver = await EventReceiver.start(secret);
  env = await startEsignTestEnv({ deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] } });
}, 60_000);
afterAll(async () => {
  await env?.close();
  await receiver?.close();
});

it('resend then reminders', async () => {
  const input = env.input({ callbackUrl: receiver.url, reminders: { firstAfter: '2 seconds', every: '1 hour', maxCount: 1 } });
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  const [, alan] = status.participants.map((p) => p.id) as [string, string];
  const mine = () => receiver.of('reminder.due').filter((e) => e.data.referenceId === input.referenceId);
  await expect.poll(mine, { timeout: 20_000 }).toHaveLength(2);
  const r = await correctEsignTransaction(env.temporal.client, input.referenceId, { kind: 'resend', by: 'ops', participantId: alan });
  console.log('resend ok', !!r.url);
  // firstAfter 2 s again: a second round (reminder 1 of 1 again) is due
  await new Promise((res) => setTimeout(res, 10_000));
  console.log('reminder.due received', mine().length, JSON.stringify(mine().map((e) => [e.data.reminder, (e.data.participant as any).name])));
  await handle.terminate('done').catch(() => undefined);
}, 90_000);
