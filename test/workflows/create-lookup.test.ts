// A create whose response was lost is retried; the retry looks for the transaction the first attempt made before it
// creates another. Under a bulk send, more than a thousand other transactions may be created in between: the walk of
// the provider's list (newest first) goes on while its records are newer than the first attempt, so it still finds
// ours instead of creating a duplicate (issue 39, a suspect confirmed). Real HTTP: the provider's list is a stub
// server, the client and the activity are the worker's.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTransactionActivities } from '../../activities/transactions.js';
import { EsignClient } from '../../src/esign/client.js';
import type { CreateTransactionRequest } from '../../src/esign/schemas.js';
import { StubHttpServer } from '../support/stub-http.js';

const NOW = Date.now();
const ours = { id: randomUUID(), esignId: randomUUID(), referenceId: 'lookup-ref', path: `org/${randomUUID()}.pdf` };
/** The provider's records, newest first: ours, made 2 minutes ago, under 1,500 made since (80 ms apart). */
const records = Array.from({ length: 2_000 }, (_, i) => {
  const mine = i === 1_500;
  return {
    id: mine ? ours.id : randomUUID(),
    esignId: mine ? ours.esignId : randomUUID(),
    status: 'esign_pending',
    referenceId: mine ? ours.referenceId : `batch.${i}`,
    documents: [{ title: 'Contract', StoragePath: mine ? ours.path : `org/${i}.pdf` }],
    participants: [],
    createdAt: new Date(NOW - i * 80).toISOString(),
  };
});

let stub: StubHttpServer;
let creates = 0;
beforeAll(async () => {
  stub = await StubHttpServer.start();
  stub.handler = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET' && url.pathname === '/transactions') {
      const offset = Number(url.searchParams.get('offset'));
      const limit = Number(url.searchParams.get('limit'));
      return void res.end(JSON.stringify({ data: records.slice(offset, offset + limit), total: records.length }));
    }
    if (req.method === 'POST' && url.pathname === '/transactions') {
      creates++;
      res.statusCode = 201;
      return void res.end(JSON.stringify({ ...records[0], id: randomUUID(), esignId: randomUUID(), referenceId: ours.referenceId }));
    }
    res.statusCode = 404;
    res.end('{}');
  };
});
afterAll(async () => {
  await stub?.close();
});

const request: CreateTransactionRequest = {
  referenceId: ours.referenceId,
  status: 'esign_pending',
  documents: [{ title: 'Contract', StoragePath: ours.path, tags: [] }],
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

it('a retried create finds the transaction its first attempt made, under 1,500 created since, and creates none', async () => {
  const client = new EsignClient({ baseUrl: stub.url, token: 'test-token' });
  try {
    const activities = createTransactionActivities({ client });
    // The second attempt of a create first tried 2.5 minutes ago.
    // Its heartbeat said when it sent: long enough ago that nothing of it can still land.
    const env = new MockActivityEnvironment({
      attempt: 2,
      scheduledTimestampMs: NOW - 150_000,
      heartbeatDetails: { attempt: 1, sending: true, sentAt: NOW - 150_000 },
    });
    const ref = await env.run((r: CreateTransactionRequest) => activities.createTransaction(r), request);
    expect(ref).toMatchObject({ transactionId: ours.id, esignId: ours.esignId });
    expect(creates).toBe(0);
    // It read as far as ours and no further.
    expect(stub.requests.filter((r) => r.method === 'GET').length).toBe(16);
  } finally {
    await client.close();
  }
});
