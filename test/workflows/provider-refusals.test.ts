// A provider that fails or refuses one endpoint while the rest of its API works (test/support/provider-proxy.ts, in
// front of the sandbox): a signing-URL endpoint that keeps failing or answers 4xx never holds the transaction's loop
// nor fails its run; a 404 ends a transaction `deleted` as the confirmation of the provider's own deletion webhook, or
// of an earlier 404 (a provider that deleted it, lost the webhook and forgot it: the run never ended), and a 404 that
// passes (a poll, a withdraw) ends nothing; reads that keep failing never hold a cancel; a replace given up on that
// reaches the provider after the withdraw does not leave a cancelled transaction signable (issue 39, defect 4 and two
// suspects; explore/regressions/purged-after-lost-deletion-never-ends.json); and a 404, an answer, then a 404 again
// ends nothing (the count starts again at any answer between).
//
// Most of these tests' time is the workflow's own waits (a read again 30 s after a 404), not work: the suites run side
// by side, each with its own worker, sandbox and proxy, and the tests of a suite whose proxy answers per transaction
// run side by side too.
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
import { NOT_FOUND_CONFIRMED_AFTER_MS } from '../../workflows/transaction/steps.js';
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

describe.concurrent('a provider that no longer has a deleted transaction (404)', () => {
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

  it('its deletion webhook, confirmed by a 404, ends the run `deleted`, not failed', async ({ expect }) => {
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

  it('a cancel whose withdraw meets a 404 that passes (the read after it answers) is answered ProviderRejected; the run follows on', async ({
    expect,
  }) => {
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

  it('a cancel whose withdraw meets a 404, confirmed by a read a little later, returns the end: deleted by the provider', async ({
    expect,
  }) => {
    const input = env.input();
    const { handle } = await env.start(input);
    const { transactionId } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    const cancelled = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed');
    expect(cancelled).toMatchObject({ status: 'deleted', endedBy: 'provider', reason: expect.stringContaining('404') as string });
    expect(await resultWithin(handle, 10_000)).toEqual(cancelled);
    await record(handle, 'cancel-withdraw-404-then-404-again.json');
  }, 90_000);

  it('404s for less than the confirmation interval end nothing (they may be passing): the transaction is followed on and completes', async ({
    expect,
  }) => {
    const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
    const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
    forgotten.add(transactionId!);
    // Its own 404s: the other tests' transactions are answered by the same proxy meanwhile.
    const answered = () => proxy.answered.filter((r) => r.includes(transactionId!)).length;
    await expect.poll(answered, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    forgotten.delete(transactionId!);
    for (const p of participants) await env.sandbox.control.signAs(transactionId!, p.id);
    expect(await resultWithin(handle, 30_000)).toMatchObject({ status: 'completed' });
  }, 60_000);
});

describe.concurrent('a provider that deleted a transaction, lost its deletion webhook, then forgot it (404 from then on)', () => {
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

  it('ends `deleted` by the provider once a read a little later answers 404 again: its event, its EsignStatus, no failed run', async ({
    expect,
  }) => {
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

describe.concurrent("a provider whose status reads keep failing (503) after a participant's webhook", () => {
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

  it('a cancel is answered (the withdraw refused, one has signed) instead of waiting on the reads; it completes once they answer', async ({
    expect,
  }) => {
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

// Attack on the provider-404 confirmation (docs/decisions/provider-404-confirmed-by-a-second-read.md): "Any answer in
// between starts the count again." Here the provider answers in between (a cancel's withdraw is refused with 409 and
// the read after it returns the live transaction, one signer having signed), yet a second 404 ~25 s after the first
// ends the run `deleted`. A stale backend behind the provider's load balancer answers exactly so: 404 now and then.
describe.concurrent("a stale backend: 404, then the provider's answer, then 404 again", () => {
  let env: EsignTestEnv;
  let proxy: ProviderProxy;
  /** The transaction whose reads are scripted, and how the next read of it is answered. */
  let target = '';
  let next: 'pass' | '404' = 'pass';
  beforeAll(async () => {
    // No bridge: the first signature's webhook is lost, so nothing but polls and the cancel reads the transaction.
    env = await startEsignTestEnv({
      providerClient: async (sandbox) => (proxy = await ProviderProxy.start(sandbox.running.url, sandbox.token)).client,
    });
    proxy.answer = (method, path) => {
      if (method !== 'GET' || !target || !path.endsWith(`/transactions/${target}`) || next !== '404') return undefined;
      next = 'pass';
      return { status: 404, detail: 'no such transaction (a stale backend)' };
    };
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
  });

  it('a 404, then the provider answering with the live transaction, then a 404 again does not end the run `deleted`', async ({
    expect,
  }) => {
    // Polls come 0.9 to 1.1 intervals apart: the second 404 comes at least 22.5 s after the first, late enough to
    // confirm it had the answer between not started the count again, and the first one sooner than at 30 s.
    const reconcileSeconds = 25;
    expect(0.9 * reconcileSeconds * 1000).toBeGreaterThan(NOT_FOUND_CONFIRMED_AFTER_MS);
    const input = env.input({ reconcileInterval: `${reconcileSeconds} seconds` });
    const { handle } = await env.start(input);
    const { transactionId, participants } = await waitForPhase(handle, 'awaiting_signatures');
    await env.sandbox.control.signAs(transactionId!, participants[0]!.id);
    target = transactionId!;

    // 1. A poll meets the stale backend: 404 (counted: the list answers).
    next = '404';
    await expect.poll(() => proxy.answered.length, { timeout: 45_000, interval: 250 }).toBe(1);

    // 2. A cancel: the withdraw is refused (409, one has signed) and the read after it answers: the provider HAS it.
    const refused = await cancelEsignTransaction(env.temporal.client, input.referenceId, 'no longer needed').catch((e: unknown) => e);
    expect(failureTypeOf(refused)).toBe(FailureType.WithdrawRefused);

    // 3. The next poll (about 25 s after the first 404) meets the stale backend again.
    next = '404';
    await expect.poll(() => proxy.answered.length, { timeout: 45_000, interval: 250 }).toBe(2);
    await new Promise((r) => setTimeout(r, 3_000));

    // The provider answered in between: the count should have started again, and the run should still follow it.
    const described = await handle.describe();
    const result = described.status.name === 'COMPLETED' ? await handle.result() : undefined;
    expect(result).toBeUndefined();
    expect(described.status.name).toBe('RUNNING');
    await record(handle, 'withdraw-answer-between-two-404s.json');
  }, 150_000);
});

// One answer of the proxy at a time: its two tests run one after the other (beside the other suites).
describe.concurrent('a signing-URL endpoint that fails', () => {
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

  it(
    'keeps failing (503): the signatures are confirmed and archived, a caller asking for a URL hears why',
    { concurrent: false, timeout: 90_000 },
    async ({ expect }) => {
      proxy.answer = (method, path) =>
        method === 'POST' && path.endsWith('/iframe-request') ? { status: 503, detail: 'down' } : undefined;
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
    },
  );

  it(
    'refuses (403): each reminder skips that participant and the run goes on to its end',
    { concurrent: false, timeout: 90_000 },
    async ({ expect }) => {
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
    },
  );
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

// After the suites above, alone: its late PUT must land after the withdraw, half a second after it is held, and a
// busy process could run the withdraw later than that.
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
