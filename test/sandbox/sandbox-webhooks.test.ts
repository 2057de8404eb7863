import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { EsignCompletedWebhook } from '../../src/esign/schemas.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';
import { eventually } from '../support/eventually.js';
import { readBody, StubHttpServer } from '../support/stub-http.js';

interface Received {
  id: string;
  body: string;
  headers: Record<string, string>;
  answered: number;
}

/**
 * A webhook receiver that verifies every `esign-completed` delivery with the
 * standardwebhooks library; the participants' progress events also sent are
 * counted in `progress` and acknowledged.
 */
async function receiver(secret: () => string, answer: (n: number) => number = () => 204) {
  const server = await StubHttpServer.start();
  const received: Received[] = [];
  const verified: unknown[] = [];
  const progress: unknown[] = [];
  server.handler = async (req, res) => {
    const body = (await readBody(req)).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    if ((JSON.parse(body) as { event: string }).event !== 'esign-completed') {
      progress.push(new Webhook(secret()).verify(body, headers));
      res.statusCode = 204;
      return void res.end();
    }
    const status = answer(received.length + 1);
    received.push({ id: headers['webhook-id']!, body, headers, answered: status });
    if (status >= 200 && status < 300) verified.push(new Webhook(secret()).verify(body, headers));
    res.statusCode = status;
    res.end();
  };
  return { server, received, verified, progress };
}

let sb: TestSandbox | undefined;
const servers: StubHttpServer[] = [];
afterEach(async () => {
  await sb?.close();
  sb = undefined;
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function completeOne(s: TestSandbox) {
  const request = await uploadedRequest(s.client);
  const created = await s.client.createTransaction(request);
  await s.control.signAs(created.id!, request.participants[0]!.id);
  return created;
}

describe('completion webhooks', () => {
  it('sends the spec payload, signed per Standard Webhooks', async () => {
    sb = await startTestSandbox();
    const secret = sb.running.webhookSecret;
    const r = await receiver(() => secret);
    servers.push(r.server);
    sb.running.webhookUrls.push(`${r.server.url}/hook`);
    const created = await completeOne(sb);

    await eventually('a delivery', () => r.verified.length > 0);
    const payload = EsignCompletedWebhook.parse(r.verified[0]);
    expect(payload).toEqual({
      event: 'esign-completed',
      entity: 'esign',
      data: { notificationId: expect.any(String) as string, entity_id: created.esignId, transaction_id: created.id },
    });
    const first = r.received[0]!;
    expect(first.id).toBe(payload.data.notificationId);
    expect(first.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(first.headers['content-type']).toBe('application/json');
    // A tampered body does not verify.
    expect(() => new Webhook(secret).verify(first.body.replace(created.id!, 'x'), first.headers)).toThrow();
    // The participant's finish came first, in the same envelope, naming the participant (docs/spec-gaps.md, row 37).
    expect(r.progress).toEqual([
      {
        event: 'esign-participant-signed',
        entity: 'esign',
        data: {
          notificationId: expect.any(String) as string,
          entity_id: created.esignId,
          transaction_id: created.id,
          participant_id: expect.any(String) as string,
        },
      },
    ]);
  });

  it('retries a failing receiver with backoff and stops after the first 2xx', async () => {
    sb = await startTestSandbox();
    const secret = sb.running.webhookSecret;
    const r = await receiver(
      () => secret,
      (n) => (n <= 2 ? 500 : 200),
    );
    servers.push(r.server);
    sb.running.webhookUrls.push(r.server.url);
    const created = await completeOne(sb);

    await eventually('an accepted delivery', () => r.verified.length === 1);
    // Nothing more may arrive. First the positive marker that the sandbox is done with it: its record is final
    // (`delivered`, so no longer due). Then a bounded wait, because an extra attempt is an absence to observe:
    // the dispatcher sends only due records, polling every 250 ms, so four polls without a request show it stopped.
    await eventually('the delivery recorded as delivered', async () =>
      (await sb!.deliveries(created.id!)).some((d) => d.payload.includes('"esign-completed"') && d.status === 'delivered'),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(r.received.map((x) => x.answered)).toEqual([500, 500, 200]);
    expect(new Set(r.received.map((x) => x.id)).size).toBe(1);
    const deliveries = (await sb.deliveries(created.id!)).filter((d) => d.payload.includes('"esign-completed"'));
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ status: 'delivered', attempts: 3 });
  });

  it('keeps a pending delivery across a sandbox restart', async () => {
    sb = await startTestSandbox();
    const secret = sb.running.webhookSecret;
    let up = false;
    const r = await receiver(
      () => secret,
      () => (up ? 204 : 503),
    );
    servers.push(r.server);
    sb.running.webhookUrls.push(r.server.url);
    const created = await completeOne(sb);
    await eventually('a failed attempt', () => r.received.length >= 1);

    await sb.restart();
    up = true;
    await eventually('delivery after restart', () => r.verified.length === 1, 30_000);
    expect(EsignCompletedWebhook.parse(r.verified[0]).data.transaction_id).toBe(created.id);
    expect(sb.running.webhookSecret).toBe(secret); // the generated secret is kept in the data dir
  });

  it('duplicates or drops webhooks when fault injection asks for it', async () => {
    sb = await startTestSandbox({ faults: { duplicateWebhookRate: 1, seed: 7 } as never });
    const secret = sb.running.webhookSecret;
    const r = await receiver(() => secret);
    servers.push(r.server);
    sb.running.webhookUrls.push(r.server.url);
    await completeOne(sb);
    await eventually('two copies', () => r.verified.length === 2);
    expect(r.received[0]!.id).toBe(r.received[1]!.id);

    sb.running.faults.configure({ dropWebhookRate: 1 });
    const dropped = await completeOne(sb);
    const rows = await eventually('a dropped delivery', async () => {
      const list = (await sb!.deliveries(dropped.id!)).filter((d) => d.payload.includes('"esign-completed"'));
      return list.length > 0 && list.every((d) => d.status !== 'pending') ? list : undefined;
    });
    expect(rows.map((d) => d.status)).toEqual(['dropped']);
    expect(r.received).toHaveLength(2);
  });
});
