// A write whose answer never came may still reach the provider after the client gave up on it: a provider slow to
// answer is still working on it. A create's retry must not look for it before then, or it misses a transaction still
// on its way and creates a second one, whose signers are invited twice; a replace's retry must not be sent before
// then, or the earlier one lands over it, and over a correction that follows (the explorer's `late` fault found
// both). Real HTTP: the provider is a stub server that takes a write in and applies it only later, the client and the
// activity are the worker's; Temporal's retries are played here, each attempt given the last heartbeat details the
// server would hold (activities/support/write-attempts.ts says what they say).
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createTransactionActivities } from '../../activities/transactions.js';
import type { UpdateTransactionRequest } from '../../src/esign/schemas.js';
import { EsignClient } from '../../src/esign/client.js';
import type { CreateTransactionRequest } from '../../src/esign/schemas.js';
import { readBody, StubHttpServer, sendJson } from '../support/stub-http.js';

/**
 * The client's give-up times: a request unanswered after 300 ms (and undici's coarse timers, up to a second more) is
 * given up on, and may land as late again after that.
 */
const TIMEOUTS = { connectTimeoutMs: 100, headersTimeoutMs: 200 };
/** When the provider makes the first create, after it came in: past the client's give-up, well within its bound. */
const LANDS_AFTER_MS = 1_800;

const request: CreateTransactionRequest = {
  referenceId: 'lands-late-ref',
  status: 'esign_pending',
  documents: [{ title: 'Contract', StoragePath: `org/${randomUUID()}.pdf`, tags: [] }],
  participants: [
    {
      id: randomUUID(),
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      authenticationType: 'none',
      twoFactorContact: 'email',
    },
  ],
};

let stub: StubHttpServer;
/** The transactions the provider made. */
const made: { id: string; esignId: string; status: string; referenceId: string; documents: unknown[]; participants: unknown[] }[] = [];
/**
 * How the provider takes the creates to come, in order (then `make`): made and answered; made only later, unanswered;
 * never made nor answered (dropped); refused with a 429.
 */
const creates: ('make' | 'late' | 'drop' | 'refuse' | 502 | 504)[] = [];
/** What the provider did with replaces, in order: a PUT that came in, or one applied. */
const replaces: string[] = [];
/**
 * How the provider takes the replaces to come, in order (then `apply`): applied and answered; applied only later,
 * unanswered; applied at once but never answered (the answer lost); or refused (409).
 */
const replaceAnswers: ('apply' | 'late' | 'lostAnswer' | 'refuse')[] = [];
const timers: NodeJS.Timeout[] = [];
/** How many of the next list reads the provider answers 503. */
let listFails = 0;
/** The transaction whose read the provider answers slowly. */
const SLOW = randomUUID();

beforeAll(async () => {
  stub = await StubHttpServer.start();
  stub.handler = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    if (req.method === 'GET' && url.pathname === '/transactions' && listFails > 0 && listFails--)
      return sendJson(res, 503, { title: 'busy' }, { 'content-type': 'application/problem+json' });
    if (req.method === 'GET' && url.pathname === '/transactions')
      return sendJson(res, 200, { data: [...made].reverse(), total: made.length });
    // A read that holds its connection for a while (as a ZIP download holds one for its whole body).
    if (req.method === 'GET' && url.pathname === `/transactions/${SLOW}`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
      return void timers.push(setTimeout(() => res.end('}'), 3_000));
    }
    if (req.method === 'GET' && url.pathname.startsWith('/transactions/')) return sendJson(res, 200, made[0]);
    if (req.method === 'POST' && url.pathname === '/transactions') {
      const make = () => {
        const record = {
          id: randomUUID(),
          esignId: randomUUID(),
          status: 'esign_pending',
          referenceId: request.referenceId!,
          documents: request.documents,
          participants: request.participants.map((p) => ({ id: p.id })),
        };
        made.push(record);
        return record;
      };
      const how = creates.shift() ?? 'make';
      if (how === 'refuse') return sendJson(res, 429, { title: 'slow down' }, { 'content-type': 'application/problem+json' });
      if (typeof how === 'number') return sendJson(res, how, { title: 'gateway' }, { 'content-type': 'application/problem+json' });
      if (how === 'drop') return; // never made, never answered: the client gives up
      // Never answered (the client gives up); made later all the same.
      if (how === 'late') return void timers.push(setTimeout(make, LANDS_AFTER_MS));
      return sendJson(res, 201, make());
    }
    if (req.method === 'PUT' && url.pathname.startsWith('/transactions/')) {
      const body = JSON.parse((await readBody(req)).toString()) as UpdateTransactionRequest;
      const n = replaces.filter((r) => r.startsWith('in')).length + 1;
      replaces.push(`in ${n}`);
      const apply = () => {
        made[0] = { ...made[0]!, status: body.status, participants: body.participants.map((p) => ({ id: p.id })) };
        replaces.push(`applied ${n}`);
      };
      const how = replaceAnswers.shift() ?? 'apply';
      if (how === 'refuse')
        return sendJson(res, 409, { title: 'a participant has already signed' }, { 'content-type': 'application/problem+json' });
      if (how === 'late') return void timers.push(setTimeout(apply, LANDS_AFTER_MS));
      apply();
      if (how === 'lostAnswer') return; // never answered: the client gives up
      return sendJson(res, 200, made[0]);
    }
    sendJson(res, 404, {});
  };
});
afterEach(() => {
  stub.requests.length = 0;
  made.length = 0;
  replaces.length = 0;
  creates.length = 0;
  replaceAnswers.length = 0;
});
afterAll(async () => {
  for (const t of timers) clearTimeout(t);
  await stub?.close();
});

const client = () => new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
/** One machine: no margin for two workers' clocks, so that the waits are only the client's bound. */
const activitiesOf = (c: EsignClient) => createTransactionActivities({ client: c, clockSkewMs: 0 });

type Outcome<T> = { value: T; beat: unknown } | { err: Error; beat: unknown };

/** Runs attempt `n` of an activity with the heartbeat details the server holds; returns its outcome and last heartbeat. */
async function attempt<T>(n: number, heartbeatDetails: unknown, run: () => Promise<T>): Promise<Outcome<T>> {
  const env = new MockActivityEnvironment({ attempt: n, heartbeatDetails, scheduledTimestampMs: Date.now() });
  let beat = heartbeatDetails;
  env.on('heartbeat', (d: unknown) => (beat = d));
  return env.run<[], T, () => Promise<T>>(run).then(
    (value) => ({ value, beat }),
    (err: Error) => ({ err, beat }),
  );
}

/** Temporal's retries: attempts from `from` until one answers or fails for good, each after the delay the last asked. */
async function retried<T>(run: () => Promise<T>, from = 1, details?: unknown): Promise<Outcome<T> & { attempts: number }> {
  for (let n = from; ; n++) {
    const outcome = await attempt(n, details, run);
    details = outcome.beat;
    const err = 'err' in outcome ? outcome.err : undefined;
    if (!err || (err instanceof ApplicationFailure && err.nonRetryable) || n >= from + 6) return { ...outcome, attempts: n };
    const delay = err instanceof ApplicationFailure ? Number(err.nextRetryDelay ?? 0) : 0;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, 5_000)));
  }
}

const posts = () => stub.requests.filter((r) => r.method === 'POST').length;
const landed = () => new Promise((resolve) => setTimeout(resolve, LANDS_AFTER_MS));

it('a create given up on lands later: a retry writes nothing until it can no longer land, then finds it', async () => {
  const c = client();
  try {
    creates.push('late');
    const a = activitiesOf(c);
    const outcome = await retried(() => a.createTransaction(request));
    await landed();
    expect(posts()).toBe(1);
    expect(made).toHaveLength(1);
    expect(outcome).toMatchObject({ value: { transactionId: made[0]!.id } });
  } finally {
    await c.close();
  }
});

it('after a worker that died before its heartbeats reached the server, the retry still waits for what it may have sent', async () => {
  const c = client();
  try {
    creates.push('late');
    const a = activitiesOf(c);
    await attempt(1, undefined, () => a.createTransaction(request));
    // The retries know nothing of the first attempt: none of its heartbeats came through.
    const outcome = await retried(() => a.createTransaction(request), 2, undefined);
    await landed();
    expect(posts()).toBe(1);
    expect(outcome).toMatchObject({ value: { transactionId: made[0]!.id } });
  } finally {
    await c.close();
  }
});

it("a retry that wrote, and whose worker died before saying when, makes the next one wait: not trusting an older attempt's word", async () => {
  const c = client();
  try {
    // The first create never reaches the provider; the second (sent by attempt 3, after attempt 2 waited) is slow.
    creates.push('drop', 'late');
    const a = activitiesOf(c);
    const first = await attempt(1, undefined, () => a.createTransaction(request));
    const second = await attempt(2, first.beat, () => a.createTransaction(request));
    expect(second).toHaveProperty('err'); // it only waited
    const third = await attempt(3, second.beat, () => a.createTransaction(request));
    expect(third).toHaveProperty('err'); // its create got no answer
    // Its worker died before any of its heartbeats reached the server, which still holds attempt 2's: that everything
    // before attempt 2 had landed. The next attempt must wait for attempt 3's create, not run on attempt 2's word.
    const rest = await retried(() => a.createTransaction(request), 4, second.beat);
    await landed();
    expect(posts()).toBe(2);
    expect(made).toHaveLength(1);
    expect(rest).toMatchObject({ value: { transactionId: made[0]!.id } });
  } finally {
    await c.close();
  }
});

it('a create the provider refused (a 429) says so, so that its retry writes at once', async () => {
  const c = client();
  try {
    creates.push('refuse');
    const a = activitiesOf(c);
    const first = await attempt(1, undefined, () => a.createTransaction(request));
    expect(first).toHaveProperty('err');
    expect(first.beat).toMatchObject({ attempt: 1, answered: true });
    const outcome = await retried(() => a.createTransaction(request), 2, first.beat);
    expect(outcome).toMatchObject({ attempts: 2, value: { transactionId: made[0]!.id } });
  } finally {
    await c.close();
  }
});

/** A transaction made at the first attempt, for a replace to work on: its id. */
async function created(a: ReturnType<typeof activitiesOf>): Promise<string> {
  const outcome = await attempt(1, undefined, () => a.createTransaction(request));
  if (!('value' in outcome)) throw outcome.err;
  return outcome.value.transactionId;
}

const replaceOf = (a: ReturnType<typeof activitiesOf>, transactionId: string, update: UpdateTransactionRequest) => () =>
  a.updateTransaction({ transactionId, request: update });

it('a replace given up on lands later: its retry is sent only once it can no longer land, so it cannot land over it', async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    const transactionId = await created(a);
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'esign_pending' };
    replaceAnswers.push('late');
    const outcome = await retried(replaceOf(a, transactionId, update));
    expect(outcome).toHaveProperty('value');
    await landed();
    // The first PUT was applied before the retry's came in: the retry's is the provider's last word.
    expect(replaces).toEqual(['in 1', 'applied 1', 'in 2', 'applied 2']);
  } finally {
    await c.close();
  }
});

it('a correction taken whose answer was lost, and its retry refused: answered as taken, since the provider holds it', async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    const transactionId = await created(a);
    // A reassignment: the first participant replaced by someone new (a new id).
    const to = { ...request.participants[0]!, id: randomUUID(), email: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper' };
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'esign_pending', participants: [to] };
    // Taken, its answer lost; the retry refused (say, the new participant signed in between).
    replaceAnswers.push('lostAnswer', 'refuse');
    const outcome = await retried(replaceOf(a, transactionId, update));
    expect(outcome).toMatchObject({ value: { transactionId, status: 'esign_pending' } });
    expect(made[0]!.participants).toEqual([{ id: to.id }]);
  } finally {
    await c.close();
  }
});

it('a replace refused on its retry while the provider holds something else is still refused', async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    const transactionId = await created(a);
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'draft' };
    replaceAnswers.push('refuse', 'refuse');
    const first = await attempt(1, undefined, replaceOf(a, transactionId, update));
    const second = await attempt(2, first.beat, replaceOf(a, transactionId, update));
    expect(second).toHaveProperty('err');
    expect(made[0]!.status).toBe('esign_pending');
  } finally {
    await c.close();
  }
});

it('a write that waits for a connection of the pool is given up on within the bound from when it said it sent', async () => {
  // One connection, held by a slow read: the create waits behind it, past the bound its attempt's heartbeat counts on.
  const c = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS, connections: 1 });
  try {
    const a = activitiesOf(c);
    const slow = c.getTransaction(SLOW).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const first = await attempt(1, undefined, () => a.createTransaction(request));
    expect(first).toHaveProperty('err');
    await slow;
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Given up on before it left: the provider never saw it, so it cannot land after the next attempt's wait.
    expect(posts()).toBe(0);
  } finally {
    await c.close();
  }
});

it('an attempt an operator reset to 1 with its heartbeat kept is still a retry: it waits and looks before writing', async () => {
  const c = client();
  try {
    creates.push('late');
    const a = activitiesOf(c);
    const first = await attempt(1, undefined, () => a.createTransaction(request));
    expect(first).toHaveProperty('err');
    // `temporal activity reset`: the count starts again at 1, the heartbeat details stay.
    const outcome = await retried(() => a.createTransaction(request), 1, first.beat);
    await landed();
    expect(posts()).toBe(1);
    expect(outcome).toMatchObject({ value: { transactionId: made[0]!.id } });
  } finally {
    await c.close();
  }
});

it('a replace never taken, refused on its retry after the transaction completed, is still refused (not read as taken)', async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    const transactionId = await created(a);
    // A replace that changes no participant: the completed record has its ids and documents, but not its status.
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'esign_pending' };
    made[0] = { ...made[0]!, status: 'completed' };
    replaceAnswers.push('refuse', 'refuse');
    const first = await attempt(1, undefined, replaceOf(a, transactionId, update));
    const second = await attempt(2, first.beat, replaceOf(a, transactionId, update));
    expect(second).toHaveProperty('err');
  } finally {
    await c.close();
  }
});

it("a 502 is an answer (the provider did what it did before it); a gateway's 504 is not: the provider may still be working", async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    creates.push(502, 504);
    const bad = await attempt(1, undefined, () => a.createTransaction(request));
    expect(bad.beat).toMatchObject({ answered: true });
    const gone = await attempt(1, undefined, () => a.createTransaction(request));
    expect(gone).toHaveProperty('err');
    expect(gone.beat).not.toHaveProperty('answered');
  } finally {
    await c.close();
  }
});

it('a retry whose lookup fails before it writes says so: the next attempt does not wait', async () => {
  const c = client();
  try {
    const a = activitiesOf(c);
    listFails = 1;
    const second = await attempt(2, { attempt: 1, sending: true, sentAt: Date.now() - 600_000 }, () => a.createTransaction(request));
    expect(second).toHaveProperty('err');
    expect(second.beat).toMatchObject({ attempt: 2, answered: true });
    expect(posts()).toBe(0);
  } finally {
    listFails = 0;
    await c.close();
  }
});
