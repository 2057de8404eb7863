// Reminders on the time-skipping test server: durable timers over days, each
// a signed event to the integrator's callback with a fresh signing URL for
// every participant still to sign; they stop for those who signed, after
// maxCount, and never come after the deadline.
import { randomBytes, randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { EventReceiver } from '../support/event-receiver.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { leaseInput, resultOrWhereItStalled, timeSkippingWorker } from '../support/time-skipping.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let env: TestWorkflowEnvironment;
let sandbox: TestSandbox;
let receiver: EventReceiver;
let pdf: string;

beforeAll(async () => {
  sandbox = await startTestSandbox();
  receiver = await EventReceiver.start(secret);
  [pdf] = (await samplePdfFiles(['Lease'])) as [string];
});
afterAll(async () => {
  await receiver?.close();
  await sandbox?.close();
});
// A test server of its own for each test: on a shared one, the first test's
// inbox outlives its transaction (it acknowledges late redeliveries for 3 days)
// and runs its last task inside the second test's skipped days. The second test
// once hung in CI until its timeout; that leftover is one suspect, not a proven
// cause (the hang did not reproduce), so the results are awaited with
// resultOrWhereItStalled, which reports the workflow's state if it recurs.
beforeEach(async () => {
  env = await createTimeSkippingEnv();
});
afterEach(async () => {
  await env?.teardown();
});

const input = (overrides: Partial<EsignTransactionInput>): EsignTransactionInput =>
  leaseInput(pdf, {
    referenceId: `remind-${randomUUID()}`,
    participants: [
      { email: 'tia@example.com', firstName: 'Tia', lastName: 'Tenant', authenticationType: 'none', twoFactorContact: 'email' },
      { email: 'leo@example.com', firstName: 'Leo', lastName: 'Landlord', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    reconcileInterval: '1 day',
    callbackUrl: receiver.url,
    ...overrides,
  });

const QUEUE = 'reminders';

async function run<T>(body: () => Promise<T>): Promise<T> {
  const worker = await timeSkippingWorker(env, sandbox, pdf, QUEUE, {
    minReconcileInterval: '1 minute',
    callbackSecrets: [secret],
    allowedUrls: [receiver.server.url],
  });
  return worker.runUntil(body);
}

const remindersOf = (referenceId: string) =>
  receiver
    .of('reminder.due')
    .filter((e) => e.data.referenceId === referenceId)
    .map((e) => `${String(e.data.reminder)}:${(e.data.participant as { name: string }).name}`)
    // The reminders of one round go out concurrently, so they may arrive in any order.
    .sort();

it('reminds those still to sign, stops for those who signed, and stops after maxCount', async () => {
  const start = input({ signingDeadline: '20 days', reminders: { firstAfter: '1 day', every: '2 days', maxCount: 3 } });
  await run(async () => {
    const { handle } = await startEsignTransaction(env.client, start, { taskQueue: QUEUE });
    await env.sleep('1 day');
    await env.sleep('1 hour');
    expect(remindersOf(start.referenceId)).toEqual(['1:Leo Landlord', '1:Tia Tenant']);
    // Tia signs on day 2: from now on only Leo is reminded.
    const status = await handle.query(statusQuery);
    await sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);
    await env.sleep('8 days');
    expect(remindersOf(start.referenceId)).toEqual(['1:Leo Landlord', '1:Tia Tenant', '2:Leo Landlord', '3:Leo Landlord']);
    // Each reminder carries a fresh signing URL that opens Leo's page.
    const last = receiver
      .of('reminder.due')
      .filter((e) => e.data.referenceId === start.referenceId)
      .at(-1)!;
    const page = await fetch(String(last.data.signingUrl));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Leo Landlord');
    // Leo signs: no reminder comes after the end.
    await sandbox.control.signAs(status.transactionId!, status.participants[1]!.id);
    expect((await resultOrWhereItStalled(handle)).status).toBe('completed');
    expect(remindersOf(start.referenceId)).toHaveLength(4);
  });
});

it('never reminds after the deadline, and stops when the transaction ends', async () => {
  const start = input({ signingDeadline: '4 days', reminders: { firstAfter: '1 day', every: '2 days', maxCount: 10 } });
  const result = await run(async () => {
    const { handle } = await startEsignTransaction(env.client, start, { taskQueue: QUEUE });
    return resultOrWhereItStalled(handle);
  });
  expect(result.status).toBe('expired');
  // Day 1 and day 3; day 5 would be after the 4-day deadline.
  expect(remindersOf(start.referenceId)).toEqual(['1:Leo Landlord', '1:Tia Tenant', '2:Leo Landlord', '2:Tia Tenant']);
  expect(receiver.of('transaction.expired').filter((e) => e.data.referenceId === start.referenceId)).toHaveLength(1);
});
