// A provider that fails or refuses one endpoint while the rest of its API works (test/support/provider-proxy.ts, in
// front of the sandbox): a signing-URL endpoint that keeps failing or answers 4xx never holds the transaction's loop
// nor fails its run; a 404 ends a transaction `deleted` as the confirmation of the provider's own deletion webhook, or
// of an earlier 404 (a provider that deleted it, lost the webhook and forgot it: the run never ended), and a 404 that
// passes (a poll, a withdraw) ends nothing; reads that keep failing never hold a cancel; a replace given up on that
// reaches the provider after the withdraw does not leave a cancelled transaction signable (issue 39, defect 4 and two
// suspects; explore/regressions/purged-after-lost-deletion-never-ends.json).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { format } from 'prettier';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransactionActivities } from '../../activities/transactions.js';
import { cancelEsignTransaction, getEsignTransaction, issueSigningUrl } from '../../src/client/transactions.js';
import { EsignStatus } from '../../src/definitions/search-attributes.js';
import { replaceTransactionUpdate } from '../../src/definitions/transaction.js';
import { EsignClient } from '../../src/esign/client.js';
import { failureTypeOf } from '../../src/client/failures.js';
import { FailureType } from '../../src/failures.js';
import type { EsignTransactionResult } from '../../src/definitions/transaction.js';
import { CURRENT_VERSION } from '../support/code-versions.js';
import { EventReceiver } from '../support/event-receiver.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { ProviderProxy } from '../support/provider-proxy.js';
import { StubHttpServer } from '../support/stub-http.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;

/**
 * These paths' histories (test/replay/histories/<current version>/, replayed by test/workflows/replay.test.ts): written when
 * RECORD_REFUSAL_HISTORIES=1, from the run that just ended.
 */
async function record(handle: WorkflowHandle, file: string): Promise<void> {
  if (process.env.RECORD_REFUSAL_HISTORIES !== '1') return;
  const path = fileURLToPath(new URL(`../replay/histories/${CURRENT_VERSION}/${file}`, import.meta.url));
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, await format(historyToJSON(await handle.fetchHistory()), { filepath: path }));
}

/** The result, or a failure saying the run is still waiting (the defect this file guards is a loop held for ever). */
async function resultWithin(handle: { result(): Promise<EsignTransactionResult> }, ms: number): Promise<EsignTransactionResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no result within ${ms} ms: the transaction's loop is held`)), ms);
  });
  try {
    return await Promise.race([handle.result(), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a signing-URL endpoint that fails', () => {
  let env: EsignTestEnv;
  let receiver: EventReceiver;
  let proxy: ProviderProxy;
  beforeAll(async () => {
    receiver = await EventReceiver.start(secret);
    env = await startEsignTestEnv({
      deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] },
      providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    });
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
    await receiver?.close();
  });

  const withReminders = () =>
    env.input({
      reconcileInterval: '1 second',
      callbackUrl: receiver.url,
      reminders: { firstAfter: '1 second', every: '1 second', maxCount: 5 },
    });

  it('keeps failing (503): the signatures are confirmed and archived, a caller asking for a URL hears why', async () => {
    proxy.answer = (method, path) => (method === 'POST' && path.endsWith('/iframe-request') ? { status: 503, detail: 'down' } : undefined);
    const input = withReminders();
    const { handle } = await env.start(input);
    const status = await waitForPhase(handle, 'awaiting_signatures');
    // A reminder is due and its URL fails.
    await expect.poll(() => proxy.answered.filter((r) => r.endsWith('/iframe-request')).length, { timeout: 20_000 }).toBeGreaterThan(0);
    // The caller's URL is refused after a few attempts, saying why, instead of waiting for ever.
    const asked = issueSigningUrl(env.temporal.client, input.referenceId, { participantIds: [status.participants[0]!.id] });
    await expect(asked).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    await expect(asked.catch((e: Error) => (e.cause as Error).message)).resolves.toMatch(/did not issue a signing URL.*ask again later/);

    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    const result = await resultWithin(handle, 30_000);
    expect(result).toMatchObject({ status: 'completed', archive: { uri: expect.any(String) as string } });
    expect(receiver.of('reminder.due')).toEqual([]);
    await record(handle, 'reminder-url-failing-then-completed.json');
  }, 90_000);

  it('refuses (403): each reminder skips that participant and the run goes on to its end', async () => {
    proxy.answer = (method, path) =>
      method === 'POST' && path.endsWith('/iframe-request') ? { status: 403, detail: 'iframe signing is not enabled' } : undefined;
    const input = withReminders();
    const { handle } = await env.start(input);
    const status = await waitForPhase(handle, 'awaiting_signatures');
    const before = proxy.answered.length;
    // Reminder rounds come and go, each refused, and the run is still waiting for signatures, not failed.
    await expect.poll(() => proxy.answered.length - before, { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
    expect(await resultWithin(handle, 30_000)).toMatchObject({ status: 'completed' });
  }, 90_000);
});

describe('a provider that no longer has a deleted transaction (404)', () => {
  let env: EsignTestEnv;
  let proxy: ProviderProxy;
  /** Transactions the provider "forgot": every call naming them answers 404. */
  const forgotten = new Set<string>();
  /** Transactions whose replace (the withdraw's PUT) answers 404 while their reads answer (a 404 that passes). */
  const writesMisrouted = new Set<string>();
  beforeAll(async () => {
    env = await startEsignTestEnv({
      bridge: true,
      providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    });
    proxy.answer = (method, path) =>
      [...forgotten].some((id) => path.includes(`/transactions/${id}`)) ||
      (method === 'PUT' && [...writesMisrouted].some((id) => path.includes(`/transactions/${id}`)))
        ? { status: 404, detail: 'no such transaction' }
        : undefined;
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
  });

  it('its deletion webhook, confirmed by a 404, ends the run `deleted`, not failed', async () => {
    const { handle } = await env.start(env.input());
    const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    await env.sandbox.control.forceEnd(transactionId!, 'deleted');
    expect(await resultWithin(handle, 30_000)).toMatchObject({
      status: 'deleted',
      endedBy: 'provider',
      reason: expect.stringContaining('404') as string,
    });
    await record(handle, 'deleted-confirmed-by-404.json');
  }, 60_000);

  it('a cancel whose withdraw meets a 404 that passes (the read after it answers) is answered ProviderRejected; the run follows on', async () => {
    const input = env.input();
    const { handle } = await env.start(input);
    const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
    writesMisrouted.add(transactionId!);
    const refused = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed').catch((e: unknown) => e);
    expect(failureTypeOf(refused)).toBe(FailureType.ProviderRejected);
    // The provider still had it: it completes, and is archived.
    writesMisrouted.delete(transactionId!);
    for (const p of participants) await env.sandbox.control.signAs(transactionId!, p.id);
    expect(await resultWithin(handle, 30_000)).toMatchObject({ status: 'completed' });
  }, 90_000);

  it('a cancel whose withdraw meets a 404, confirmed by a read a little later, returns the end: deleted by the provider', async () => {
    const input = env.input();
    const { handle } = await env.start(input);
    const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    const cancelled = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed');
    expect(cancelled).toMatchObject({ status: 'deleted', endedBy: 'provider', reason: expect.stringContaining('404') as string });
    expect(await resultWithin(handle, 10_000)).toEqual(cancelled);
    await record(handle, 'cancel-withdraw-404-then-404-again.json');
  }, 90_000);

  it('404s for less than the confirmation interval end nothing (they may be passing): the transaction is followed on and completes', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
    const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    const before = proxy.answered.length;
    await expect.poll(() => proxy.answered.length - before, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    forgotten.delete(transactionId!);
    for (const p of participants) await env.sandbox.control.signAs(transactionId!, p.id);
    expect(await resultWithin(handle, 30_000)).toMatchObject({ status: 'completed' });
  }, 60_000);
});

describe('a provider that deleted a transaction, lost its deletion webhook, then forgot it (404 from then on)', () => {
  let env: EsignTestEnv;
  let receiver: EventReceiver;
  let proxy: ProviderProxy;
  /** Transactions the provider forgot: every call naming them answers 404 (its list still answers). */
  const forgotten = new Set<string>();
  beforeAll(async () => {
    receiver = await EventReceiver.start(secret);
    // No bridge: the sandbox's deletion webhook reaches nobody (lost).
    env = await startEsignTestEnv({
      deps: { callbackSecrets: [secret], allowedUrls: [receiver.server.url] },
      providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    });
    proxy.answer = (_method, path) =>
      [...forgotten].some((id) => path.includes(`/transactions/${id}`)) ? { status: 404, detail: 'no such transaction' } : undefined;
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
    await receiver?.close();
  });

  it('ends `deleted` by the provider once a read a little later answers 404 again: its event, its EsignStatus, no failed run', async () => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second', callbackUrl: receiver.url }));
    const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    await env.sandbox.control.forceEnd(transactionId!, 'deleted');
    const result = await resultWithin(handle, 60_000);
    expect(result).toMatchObject({ status: 'deleted', endedBy: 'provider', reason: expect.stringContaining('404') as string });
    // Not at the first 404: the end waited for another, a little later.
    expect(proxy.answered.filter((r) => r === `GET /transactions/${transactionId}`).length).toBeGreaterThanOrEqual(2);
    const described = await handle.describe();
    expect(described.status.name).toBe('COMPLETED');
    expect(described.typedSearchAttributes.get(EsignStatus)).toBe('deleted');
    await expect.poll(() => receiver.of('transaction.deleted').map((e) => e.data.status), { timeout: 20_000 }).toEqual(['deleted']);
    await record(handle, 'deleted-webhook-lost-then-404-twice.json');
  }, 90_000);
});

describe("the read's 404 counts only while the provider answers its list", () => {
  let stub: StubHttpServer;
  let listAnswers = true;
  beforeAll(async () => {
    stub = await StubHttpServer.start();
    stub.handler = (req, res) => {
      const listed = req.method === 'GET' && new URL(req.url ?? '/', 'http://stub').pathname === '/transactions';
      res.setHeader('content-type', 'application/problem+json');
      if (listed && listAnswers) {
        res.setHeader('content-type', 'application/json');
        return void res.end(JSON.stringify({ data: [], total: 0 }));
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ title: 'Not Found', status: 404, detail: 'no such thing' }));
    };
  });
  afterAll(async () => {
    await stub?.close();
  });

  const read = async () => {
    const client = new EsignClient({ baseUrl: stub.url, token: 'test-token' });
    try {
      const activities = createTransactionActivities({ client });
      return await new MockActivityEnvironment()
        .run((id: string) => activities.getTransactionStatus(id), randomUUID())
        .catch((e: unknown) => e as Error);
    } finally {
      await client.close();
    }
  };

  it('answered: a final ProviderRejected with the 404, which the workflow counts', async () => {
    listAnswers = true;
    expect(await read()).toMatchObject({ type: FailureType.ProviderRejected, nonRetryable: true, details: [{ status: 404 }] });
  });

  it('not answered (a wrong base URL): a retryable failure without the 404, which the workflow does not count', async () => {
    listAnswers = false;
    const failure = (await read()) as Error;
    expect(failure).toMatchObject({ type: FailureType.ProviderUnavailable, nonRetryable: false, details: [{ status: null }] });
    expect(failure.message).toMatch(/did not answer its list either/);
  });
});

describe('a replace whose first attempt timed out and lands after the withdraw', () => {
  let env: EsignTestEnv;
  let proxy: ProviderProxy;
  /** The first replace PUT is held, unanswered, and sent on once released: it lands late. */
  let held: { path: string; release: () => void } | undefined;
  beforeAll(async () => {
    env = await startEsignTestEnv({
      providerClient: async (sandbox) => {
        proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token);
        // The worker gives up on an unanswered request after ~1.5 s, as it would after its 40 s in production.
        return new EsignClient({ baseUrl: proxy.server.url, token: sandbox.token, connectTimeoutMs: 500, headersTimeoutMs: 1_000 });
      },
    });
  });
  afterAll(async () => {
    held?.release();
    await env?.close();
    await proxy?.close();
  });

  it('the transaction reported cancelled is not signable at the provider afterwards', async () => {
    const input = env.input();
    const { handle } = await env.start(input);
    const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');
    let releaseHeld!: () => void;
    const release = new Promise<void>((r) => (releaseHeld = r));
    proxy.hold = (method, path) => {
      if (method !== 'PUT' || !path.includes(transactionId!) || held) return undefined;
      held = { path, release: releaseHeld };
      return release;
    };
    await getEsignTransaction(env.temporal.client, input.referenceId).executeUpdate(replaceTransactionUpdate, {
      args: [{ status: 'esign_pending', emailSubject: 'Please sign, corrected' }],
    });
    expect(held).toBeDefined();
    // The first attempt's PUT (esign_pending) reaches the provider half a second from now, after the withdraw,
    // within the time the worker's client gives a request (1.5 s).
    setTimeout(() => held!.release(), 500);
    const cancelled = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'changed our mind');
    expect(cancelled.status).toBe('cancelled');
    await expect.poll(() => proxy.landed.length, { timeout: 10_000 }).toBe(1);
    const atProvider = await env.sandbox.client.getTransaction(transactionId!);
    expect(atProvider.status, 'reported cancelled, yet signable at the provider').not.toBe('esign_pending');
    await record(handle, 'replace-lands-after-withdraw.json');
  }, 90_000);
});

describe("a provider whose status reads keep failing (503) after a participant's webhook", () => {
  let env: EsignTestEnv;
  let proxy: ProviderProxy;
  /** Transactions whose reads (`GET /transactions/{id}`) answer 503; every other call goes through. */
  const unreadable = new Set<string>();
  beforeAll(async () => {
    env = await startEsignTestEnv({
      bridge: true,
      providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    });
    proxy.answer = (method, path) =>
      method === 'GET' && [...unreadable].some((id) => path.endsWith(`/transactions/${id}`)) ? { status: 503, detail: 'down' } : undefined;
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
  });

  it('a cancel is answered (the withdraw refused, one has signed) instead of waiting on the reads; it completes once they answer', async () => {
    const input = env.input();
    const { handle } = await env.start(input);
    const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
    unreadable.add(transactionId!);
    const before = proxy.answered.length;
    // One of two signs: the webhook asks the workflow to read the participants' progress, and the read fails.
    await env.sandbox.control.signAs(transactionId!, participants[0]!.id);
    await expect.poll(() => proxy.answered.length - before, { timeout: 20_000 }).toBeGreaterThan(0);
    // Someone signed, so the provider refuses the withdraw (409) and cannot be asked how it stands: the cancel hears
    // that, within seconds, rather than when the reads come back.
    const refused = await resultWithin(
      {
        result: () => cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed').catch((e: unknown) => e as never),
      },
      30_000,
    );
    expect(failureTypeOf(refused)).toBe(FailureType.WithdrawRefused);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    // The reads answer again; the second signer signs; it is confirmed and archived.
    unreadable.delete(transactionId!);
    await env.sandbox.control.signAs(transactionId!, participants[1]!.id);
    expect(await resultWithin(handle, 30_000)).toMatchObject({ status: 'completed', archive: { uri: expect.any(String) as string } });
    await record(handle, 'status-reads-down-cancel-refused-then-completed.json');
  }, 90_000);
});
