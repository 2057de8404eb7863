// The bridge, in its own process, under thousands of generated hostile
// requests: never a 5xx while Temporal is up, never a signal from a rejected
// request, and memory that stays flat.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { launch, type Launched } from '../../tools/support/launch.js';
import { pool, processUsage } from '../../tools/support/measure.js';
import { inboxIdFor } from '../../src/definitions/inbox.js';
import { newSecret, postWebhook, signedHeaders } from '../support/bridge.js';
import { completedWebhook } from '../support/esign-env.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { connectToTestServer, freePort, uniqueTaskQueue, type TemporalTestContext } from '../support/temporal.js';

const secret = newSecret();
let bridge: Launched;
let url: string;
/** Readiness and metrics: never on the public port. */
let internalUrl: string;
let temporal: TemporalTestContext;
/** The provider the bridge asks who owns a transaction: it knows none of the attacks' transactions. */
let sandbox: TestSandbox;

beforeAll(async () => {
  temporal = await connectToTestServer();
  sandbox = await startTestSandbox();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  bridge = await launch('src/bridge/main.ts', {
    env: {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      ESIGN_TASK_QUEUE: uniqueTaskQueue('abuse'),
      BRIDGE_PORT: String(port),
      ESIGN_WEBHOOK_SECRETS: secret,
      ESIGN_PROVIDER_URL: sandbox.running.url,
      ESIGN_PROVIDER_TOKEN: sandbox.token,
      BRIDGE_LOG: 'false',
      ESIGN_METRICS_ADDRESS: '',
      // Thousands of requests from one address: the per-address limit has its own test (bridge-hardening).
      BRIDGE_RATE_LIMIT: '0',
    },
    ready: /listening/,
  });
  internalUrl = /readiness and metrics on (http:\/\/\S+)\/readyz/.exec(bridge.output())![1]!;
});
afterAll(async () => {
  await bridge?.stop();
  await sandbox?.close();
  await temporal?.close();
});

type Kind = 'malformed' | 'huge' | 'deep' | 'wrong-types' | 'forged' | 'stale' | 'signature-of-another-body' | 'unsigned' | 'unknown-id';
interface Attack {
  kind: Kind;
  body: string;
  headers: Record<string, string>;
  /** The transaction a rejected request names, if any: it must get no inbox. */
  transactionId?: string;
}

// A handful of unknown transactions: accepted requests for them start orphan inboxes, which is by design.
const unknownIds = Array.from({ length: 3 }, () => randomUUID());
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, '');

const attacks: fc.Arbitrary<Attack> = fc.oneof(
  fc.string({ maxLength: 3000 }).map((s) => ({ kind: 'malformed' as const, body: `{${s}`, headers: signedHeaders(secret, `{${s}`) })),
  fc.integer({ min: 65 * 1024, max: 512 * 1024 }).map((n) => {
    const body = `{"event":"esign-completed","pad":"${'x'.repeat(n)}"}`;
    return { kind: 'huge' as const, body, headers: signedHeaders(secret, body) };
  }),
  fc.integer({ min: 100, max: 20_000 }).map((depth) => {
    // Deep where a string belongs: a parser or validator that recursed would fall over here.
    const body = `{"event":"esign-completed","entity":"esign","data":{"notificationId":"${randomUUID()}","entity_id":"${randomUUID()}","transaction_id":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    return { kind: 'deep' as const, body, headers: signedHeaders(secret, body) };
  }),
  fc
    .record({
      event: fc.oneof(fc.constant('esign-completed'), fc.integer(), fc.constant(null)),
      entity: fc.oneof(fc.constant('esign'), fc.boolean(), fc.array(fc.string())),
      data: fc.oneof(
        fc.constant(null),
        fc.string(),
        fc.record({
          notificationId: fc.oneof(fc.integer(), fc.string({ maxLength: 10 })),
          entity_id: fc.oneof(fc.constant(null), fc.double()),
          transaction_id: fc.constant(randomUUID()),
        }),
      ),
    })
    .map((o) => {
      const body = JSON.stringify(o);
      const data = o.data as { transaction_id?: string } | null;
      return {
        kind: 'wrong-types' as const,
        body,
        headers: signedHeaders(secret, body),
        ...(typeof data === 'object' && data?.transaction_id ? { transactionId: data.transaction_id } : {}),
      };
    }),
  fc.constant(null).map(() => {
    const transactionId = randomUUID();
    const body = JSON.stringify(completedWebhook({ transactionId, esignId: randomUUID() }));
    return { kind: 'forged' as const, body, headers: signedHeaders(newSecret(), body), transactionId };
  }),
  fc.integer({ min: 6, max: 60 * 24 * 30 }).map((minutesAgo) => {
    const transactionId = randomUUID();
    const body = JSON.stringify(completedWebhook({ transactionId, esignId: randomUUID() }));
    return {
      kind: 'stale' as const,
      body,
      headers: signedHeaders(secret, body, { at: new Date(Date.now() - minutesAgo * 60_000) }),
      transactionId,
    };
  }),
  fc.constant(null).map(() => {
    const transactionId = randomUUID();
    const body = JSON.stringify(completedWebhook({ transactionId, esignId: randomUUID() }));
    const other = JSON.stringify(completedWebhook({ transactionId: randomUUID(), esignId: randomUUID() }));
    return { kind: 'signature-of-another-body' as const, body, headers: signedHeaders(secret, other), transactionId };
  }),
  fc.tuple(fc.string({ maxLength: 60 }), fc.string({ maxLength: 20 }), fc.string({ maxLength: 120 })).map(([id, ts, sig]) => {
    const transactionId = randomUUID();
    const body = JSON.stringify(completedWebhook({ transactionId, esignId: randomUUID() }));
    return {
      kind: 'unsigned' as const,
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': printable(id),
        'webhook-timestamp': printable(ts),
        'webhook-signature': printable(sig),
      },
      transactionId,
    };
  }),
  fc.constantFrom(...unknownIds).map((transactionId) => {
    const body = JSON.stringify(completedWebhook({ transactionId, esignId: randomUUID() }));
    return { kind: 'unknown-id' as const, body, headers: signedHeaders(secret, body) };
  }),
);

const expectedStatus: Record<Kind, number[]> = {
  malformed: [400],
  huge: [413],
  deep: [422],
  'wrong-types': [422],
  forged: [401],
  stale: [401],
  'signature-of-another-body': [401],
  unsigned: [401],
  'unknown-id': [200],
};

/** Raw bytes on a socket, for what an HTTP client library refuses to send. */
function raw(bytes: string): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(bytes));
    let reply = '';
    socket.on('data', (c: Buffer) => (reply += c.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0)));
  });
}

it('answers thousands of hostile requests with 4xx, never 5xx, signals nothing it rejected, and keeps its memory flat', async () => {
  const generated = fc.sample(attacks, { numRuns: 3000, seed: 20261122 });
  const rejectedIds: string[] = [];
  const wrong: string[] = [];
  const fire = async (a: Attack) => {
    const res = await postWebhook(url, a.body, a.headers);
    if (!expectedStatus[a.kind].includes(res.status)) wrong.push(`${a.kind}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    if (res.status >= 400 && a.transactionId) rejectedIds.push(a.transactionId);
  };

  await pool(500, 8, (i) => fire(generated[i]!)); // warm-up: JIT, pools, caches
  const warm = await processUsage(bridge.child.pid!);
  await pool(generated.length - 500, 8, (i) => fire(generated[i + 500]!));
  const after = await processUsage(bridge.child.pid!);

  // Header abuse that undici will not even send: injected line breaks, NULs, huge and duplicated headers.
  const body = JSON.stringify(completedWebhook({ transactionId: randomUUID(), esignId: randomUUID() }));
  const h = signedHeaders(secret, body);
  const head = (extra: string) =>
    `POST /webhooks/esign HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
  const rawCases = [
    head(
      `webhook-id: ${h['webhook-id']}\rX-Injected: 1\r\nwebhook-timestamp: ${h['webhook-timestamp']}\r\nwebhook-signature: ${h['webhook-signature']}\r\n`,
    ),
    head(`webhook-id: a\0b\r\nwebhook-timestamp: ${h['webhook-timestamp']}\r\nwebhook-signature: ${h['webhook-signature']}\r\n`),
    head(
      `webhook-id: ${'i'.repeat(20_000)}\r\nwebhook-timestamp: ${h['webhook-timestamp']}\r\nwebhook-signature: ${h['webhook-signature']}\r\n`,
    ),
    head(
      `webhook-id: ${h['webhook-id']}\r\nwebhook-id: other\r\nwebhook-timestamp: ${h['webhook-timestamp']}\r\nwebhook-signature: v1,forged\r\nwebhook-signature: v1,forged-too\r\n`,
    ),
    head(
      `webhook-id: ${h['webhook-id']}\r\n folded-continuation\r\nwebhook-timestamp: ${h['webhook-timestamp']}\r\nwebhook-signature: ${h['webhook-signature']}\r\n`,
    ),
    `POST /webhooks/esign HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
  ];
  for (const c of rawCases) {
    const status = await raw(c);
    expect(status, c.slice(0, 120)).toBeGreaterThanOrEqual(400);
    expect(status, c.slice(0, 120)).toBeLessThan(500);
  }

  expect(wrong).toEqual([]);
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  // The public port serves the webhook route and liveness only; Temporal calls and counters are internal.
  for (const path of ['/readyz', '/metrics']) expect((await fetch(`${url}${path}`)).status).toBe(404);
  expect((await fetch(`${internalUrl}/readyz`)).status).toBe(200);
  expect(await (await fetch(`${internalUrl}/metrics`)).text()).toMatch(/esign_bridge_webhooks_total\{outcome="unauthenticated"\} [1-9]/);

  // No rejected request reached Temporal: none of the transactions they named has an inbox.
  const reached: string[] = [];
  await pool(rejectedIds.length, 16, async (i) => {
    const id = rejectedIds[i]!;
    try {
      await temporal.client.workflow.getHandle(inboxIdFor(id)).describe();
      reached.push(id);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  });
  expect(rejectedIds.length).toBeGreaterThan(1000);
  expect(reached).toEqual([]);

  // Flat memory: 2,500 requests after warm-up add little to the peak (a leak of a few KiB per request would show).
  const growthMiB = (after.peakRssBytes - warm.peakRssBytes) / 2 ** 20;
  expect(growthMiB).toBeLessThan(40);
}, 300_000);
