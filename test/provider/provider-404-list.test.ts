// A read's 404 counts as the provider's answer only while the provider answers its list (docs/decisions/
// provider-404-confirmed-by-a-second-read.md); the list's envelope is what shows that, whatever its newest record
// holds: a record in a shape this client does not know must not hide a forgotten transaction.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransactionActivities } from '../../activities/transactions.js';
import { EsignClient } from '../../src/esign/client.js';
import { FailureType } from '../../src/failures.js';
import { StubHttpServer } from '../support/stub-http.js';

describe("the read's 404 counts while the provider answers its list, whatever the list's newest record holds", () => {
  let stub: StubHttpServer;
  beforeAll(async () => {
    stub = await StubHttpServer.start();
    stub.handler = (req, res) => {
      const listed = req.method === 'GET' && new URL(req.url ?? '/', 'http://stub').pathname === '/transactions';
      if (listed) {
        // A 200 with the account's newest transaction (another integrator's), whose participant has a status this
        // client does not know (the spec shows no participant statuses; docs/spec-gaps.md row 33).
        res.setHeader('content-type', 'application/json');
        return void res.end(
          JSON.stringify({
            data: [
              {
                id: randomUUID(),
                status: 'sent',
                documents: [],
                participants: [{ id: 'p1', email: 'x@example.com', status: 'delegated' }],
              },
            ],
            total: 1,
          }),
        );
      }
      res.setHeader('content-type', 'application/problem+json');
      res.statusCode = 404;
      res.end(JSON.stringify({ title: 'Not Found', status: 404, detail: 'no such transaction' }));
    };
  });
  afterAll(async () => {
    await stub?.close();
  });

  it('a 404 for a forgotten transaction is counted (ProviderRejected 404), so the run can end `deleted`', async () => {
    const client = new EsignClient({ baseUrl: stub.url, token: 'test-token' });
    try {
      const activities = createTransactionActivities({ client });
      const failure = await new MockActivityEnvironment()
        .run((id: string) => activities.getTransactionStatus(id), randomUUID())
        .catch((e: unknown) => e as Error);
      expect(failure).toMatchObject({ type: FailureType.ProviderRejected, nonRetryable: true, details: [{ status: 404 }] });
    } finally {
      await client.close();
    }
  });
});

// ---------------------------------------------------------------------------------- target 3: hand-sent notifications
