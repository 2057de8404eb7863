// A write whose answer never came may still reach the provider after the client gave up on it: a provider slow to
// answer is still working on it. A create's retry must not look for it before then, or it misses a transaction still
// on its way and creates a second one, whose signers are invited twice; a replace's retry must not be sent before
// then, or the earlier one lands over it, and over a correction that follows (the explorer's `late` fault found
// both). Real HTTP: the provider is a stub server that takes the first write in and applies it only later, the client
// and the activity are the worker's.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
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
/** How the provider takes the next create: in, and made only later, unanswered; or refused with a 503. */
let nextCreate: 'late' | 'refuse' | 'make' = 'make';
/** What the provider did with replaces, in order: a PUT that came in, or one applied late. */
const replaces: string[] = [];
/**
 * How the provider takes the next replace: applied and answered; applied only later, unanswered; applied at once but
 * never answered (the answer lost); or refused (409).
 */
let nextReplace: 'apply' | 'late' | 'lostAnswer' | 'refuse' = 'apply';
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  stub = await StubHttpServer.start();
  stub.handler = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    if (req.method === 'GET' && url.pathname === '/transactions')
      return sendJson(res, 200, { data: [...made].reverse(), total: made.length });
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
      const how = nextCreate;
      nextCreate = 'make';
      if (how === 'refuse') return sendJson(res, 503, { title: 'busy' }, { 'content-type': 'application/problem+json' });
      // Never answered (the client gives up); made later all the same.
      if (how === 'late') return void timers.push(setTimeout(make, LANDS_AFTER_MS));
      return sendJson(res, 201, make());
    }
    if (req.method === 'GET' && url.pathname.startsWith('/transactions/')) return sendJson(res, 200, made[0]);
    if (req.method === 'PUT' && url.pathname.startsWith('/transactions/')) {
      const body = JSON.parse((await readBody(req)).toString()) as UpdateTransactionRequest;
      const n = replaces.filter((r) => r.startsWith('in')).length + 1;
      replaces.push(`in ${n}`);
      const apply = () => {
        made[0] = { ...made[0]!, status: body.status, participants: body.participants.map((p) => ({ id: p.id })) };
        replaces.push(`applied ${n}`);
      };
      const how = nextReplace;
      nextReplace = 'apply';
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
  made.length = 0;
  replaces.length = 0;
  stub.requests.length = 0;
});
afterAll(async () => {
  for (const t of timers) clearTimeout(t);
  await stub?.close();
});

/** Runs the create as attempt `attempt`, with what the attempt before heartbeat; returns its result and last heartbeat. */
async function attempt(client: EsignClient, n: number, heartbeatDetails?: unknown) {
  const activities = createTransactionActivities({ client });
  const env = new MockActivityEnvironment({ attempt: n, scheduledTimestampMs: Date.now(), heartbeatDetails });
  let beat: unknown;
  env.on('heartbeat', (d: unknown) => (beat = d));
  const outcome = await env
    .run((r: CreateTransactionRequest) => activities.createTransaction(r), request)
    .then(
      (ref) => ({ ref }),
      (err: Error) => ({ err }),
    );
  return { ...outcome, beat };
}

it('a create given up on lands later: its retry waits for it and finds it, and makes no second one', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    nextCreate = 'late';
    const first = await attempt(client, 1);
    expect(first).toHaveProperty('err');
    const second = await attempt(client, 2, first.beat);
    await new Promise((resolve) => setTimeout(resolve, LANDS_AFTER_MS));
    expect(stub.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(made).toHaveLength(1);
    expect(second).toMatchObject({ ref: { transactionId: made[0]!.id } });
  } finally {
    await client.close();
  }
});

it('after a worker that died before its heartbeat reached the server, the retry still waits for what it may have sent', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    nextCreate = 'late';
    await attempt(client, 1);
    // The retry knows nothing of the first attempt: no heartbeat came through.
    const second = await attempt(client, 2, undefined);
    await new Promise((resolve) => setTimeout(resolve, LANDS_AFTER_MS));
    expect(stub.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(made).toHaveLength(1);
    expect(second).toMatchObject({ ref: { transactionId: made[0]!.id } });
  } finally {
    await client.close();
  }
});

it('a create the provider answered says so, so that its retry does not wait for a request that cannot land', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    nextCreate = 'refuse';
    const first = await attempt(client, 1);
    expect(first).toHaveProperty('err');
    expect(first.beat).toMatchObject({ answered: true });
    const second = await attempt(client, 2, first.beat);
    expect(made).toHaveLength(1);
    expect(second).toMatchObject({ ref: { transactionId: made[0]!.id } });
  } finally {
    await client.close();
  }
});

/** Runs a replace as attempt `n`, with what the attempt before heartbeat; returns its answer and last heartbeat. */
async function replace(
  client: EsignClient,
  n: number,
  transactionId: string,
  update: UpdateTransactionRequest,
  heartbeatDetails?: unknown,
) {
  const activities = createTransactionActivities({ client });
  const env = new MockActivityEnvironment({ attempt: n, heartbeatDetails });
  let beat: unknown;
  env.on('heartbeat', (d: unknown) => (beat = d));
  const outcome = await env
    .run((i: { transactionId: string; request: UpdateTransactionRequest }) => activities.updateTransaction(i), {
      transactionId,
      request: update,
    })
    .then(
      (value) => ({ value }),
      (err: Error) => ({ err }),
    );
  return { ...outcome, beat };
}

it('a replace given up on lands later: its retry is sent only once it can no longer land, so it cannot land over it', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    nextCreate = 'make';
    const { ref } = (await attempt(client, 1)) as { ref: { transactionId: string } };
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'esign_pending' };
    nextReplace = 'late';
    const first = await replace(client, 1, ref.transactionId, update);
    expect(first).toHaveProperty('err');
    const second = await replace(client, 2, ref.transactionId, update, first.beat);
    expect(second).toHaveProperty('value');
    await new Promise((resolve) => setTimeout(resolve, LANDS_AFTER_MS));
    // The first PUT was applied before the retry's came in: the retry's is the provider's last word.
    expect(replaces).toEqual(['in 1', 'applied 1', 'in 2', 'applied 2']);
  } finally {
    await client.close();
  }
});

it('a correction taken whose answer was lost, and its retry refused: answered as taken, since the provider holds it', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    const { ref } = (await attempt(client, 1)) as { ref: { transactionId: string } };
    // A reassignment: the first participant replaced by someone new (a new id).
    const reassigned = {
      ...request.participants[0]!,
      id: randomUUID(),
      email: 'grace@example.com',
      firstName: 'Grace',
      lastName: 'Hopper',
    };
    const update: UpdateTransactionRequest = {
      ...request,
      referenceId: request.referenceId!,
      status: 'esign_pending',
      participants: [reassigned],
    };
    nextReplace = 'lostAnswer';
    const first = await replace(client, 1, ref.transactionId, update);
    expect(first).toHaveProperty('err');
    // The retry is refused (say, the new participant signed in between, and the provider refuses a change to a signer).
    nextReplace = 'refuse';
    const second = await replace(client, 2, ref.transactionId, update, first.beat);
    expect(second).toMatchObject({ value: { transactionId: ref.transactionId, status: 'esign_pending' } });
    expect(made[0]!.participants).toEqual([{ id: reassigned.id }]);
  } finally {
    await client.close();
  }
});

it('a replace refused on its retry while the provider holds something else is still refused, saying until when the first may land', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token', ...TIMEOUTS });
  try {
    const { ref } = (await attempt(client, 1)) as { ref: { transactionId: string } };
    const update: UpdateTransactionRequest = { ...request, referenceId: request.referenceId!, status: 'draft' };
    nextReplace = 'refuse';
    const first = await replace(client, 1, ref.transactionId, update);
    nextReplace = 'refuse';
    const second = await replace(client, 2, ref.transactionId, update, first.beat);
    expect(second).toHaveProperty('err');
    expect(made[0]!.status).toBe('esign_pending');
  } finally {
    await client.close();
  }
});
