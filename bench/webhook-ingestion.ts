// Scenario "webhooks": autocannon against the bridge's /webhooks/esign with
// validly signed, distinct notifications for running transaction workflows. In
// the same run: a bare node:http server answering 204 (the HTTP ceiling here)
// and a loop of raw signals at the same concurrency (the Temporal ceiling).
// Bridge and bare server run in their own processes; the bare server also
// answers the bridge's reads of the provider's record (a completion is
// confirmed with the provider each time; the owner's referenceId is
// remembered).
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import autocannon from 'autocannon';
import { Webhook } from 'standardwebhooks';
import { esignCompletedSignal, workflowIdFor } from '../src/definitions/transaction.js';
import { launch } from '../tools/support/launch.js';
import { freePort } from '../tools/support/net.js';
import { fmt, markdownTable, percentile, record } from './lib.js';
import { benchTemporal, WARMUP } from './setup.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
/** Running transaction workflows the webhooks name (the bench smoke gives a few: starting 200 proves nothing more). */
const TRANSACTIONS = Number(process.env.BENCH_WEBHOOK_TRANSACTIONS ?? 200);

async function cannon(url: string, options: Partial<autocannon.Options>): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, duration: SECONDS, ...options });
}

export async function webhookIngestion(command: string): Promise<void> {
  const temporal = await benchTemporal();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const bridgePort = await freePort();
  const barePort = await freePort();
  const taskQueue = 'bench-webhooks';
  const transactions = Array.from({ length: TRANSACTIONS }, () => randomUUID());
  const signer = new Webhook(secret);
  const signedRequest = (): autocannon.Request => {
    const body = JSON.stringify({
      event: 'esign-completed',
      entity: 'esign',
      data: {
        notificationId: randomUUID(),
        entity_id: randomUUID(),
        transaction_id: transactions[Math.floor(Math.random() * transactions.length)],
      },
    });
    const id = `msg_${randomUUID()}`;
    const at = new Date();
    return {
      method: 'POST',
      path: '/webhooks/esign',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signer.sign(id, at, body),
      },
    };
  };

  const bare = await launch('bench/bare-http-server.ts', { env: { BARE_PORT: String(barePort) }, ready: /listening/ });
  const bridge = await launch('src/bridge/main.ts', {
    env: {
      TEMPORAL_ADDRESS: temporal.address,
      BRIDGE_PORT: String(bridgePort),
      ESIGN_WEBHOOK_SECRETS: secret,
      ESIGN_TASK_QUEUE: taskQueue,
      ESIGN_PROVIDER_URL: `http://127.0.0.1:${barePort}`,
      ESIGN_PROVIDER_TOKEN: 'bench',
      BRIDGE_LOG: 'false',
      // One address sends everything here: the per-address rate limit would measure itself.
      BRIDGE_RATE_LIMIT: '0',
    },
    ready: /listening/,
  });
  const rows: Record<string, string | number>[] = [];
  try {
    // Running workflows for the transactions the webhooks name (no worker needed: the server records the signals).
    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection });
    const ownerOf = (t: string) => workflowIdFor(`bench-${t}`);
    for (const t of transactions) await client.workflow.start('esignTransaction', { workflowId: ownerOf(t), taskQueue, args: [{}] });
    // Warm-up (BENCH_WARMUP=0: none), then measure.
    if (WARMUP > 0) await cannon(`http://127.0.0.1:${bridgePort}`, { duration: 3, requests: [{ setupRequest: () => signedRequest() }] });
    const bridgeRun = await cannon(`http://127.0.0.1:${bridgePort}`, { requests: [{ setupRequest: () => signedRequest() }] });
    const bareRun = await cannon(`http://127.0.0.1:${barePort}`, { requests: [{ setupRequest: () => signedRequest() }] });

    // Raw signal-with-start loop at the same concurrency, for the same time.
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          const t = transactions[Math.floor(Math.random() * transactions.length)]!;
          await client.workflow.getHandle(ownerOf(t)).signal(esignCompletedSignal, {
            event: 'esign-completed',
            entity: 'esign',
            data: { notificationId: randomUUID(), entity_id: randomUUID(), transaction_id: t },
          });
          latencies.push(performance.now() - t0);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => percentile(latencies, p);
    const signalRate = latencies.length / SECONDS;
    await connection.close();

    const bridgeOk = bridgeRun.non2xx === 0 && bridgeRun.errors === 0;
    rows.push(
      {
        target: 'bridge /webhooks/esign',
        'req/s': fmt(bridgeRun.requests.average, 0),
        'p50 ms': bridgeRun.latency.p50,
        'p99 ms': bridgeRun.latency.p99,
        'non-2xx + errors': bridgeRun.non2xx + bridgeRun.errors,
      },
      {
        target: 'baseline: bare node:http 204',
        'req/s': fmt(bareRun.requests.average, 0),
        'p50 ms': bareRun.latency.p50,
        'p99 ms': bareRun.latency.p99,
        'non-2xx + errors': bareRun.non2xx + bareRun.errors,
      },
      {
        target: 'baseline: raw signal loop',
        'req/s': fmt(signalRate, 0),
        'p50 ms': fmt(pct(50)),
        'p99 ms': fmt(pct(99)),
        'non-2xx + errors': 0,
      },
    );
    await record('webhook ingestion', command, markdownTable(rows), [
      `${CONNECTIONS} connections, ${SECONDS} s per target, ${TRANSACTIONS} running transaction workflows (no worker); every request a distinct, validly signed notification.`,
      `Bridge / raw signal ceiling: ${fmt(bridgeRun.requests.average / signalRate, 2)} (target: at least 0.9). Bridge / bare HTTP: ${fmt(bridgeRun.requests.average / bareRun.requests.average, 3)}.`,
      bridgeOk ? 'Every bridge request was answered 2xx.' : 'Some bridge requests failed: see non-2xx + errors.',
    ]);
  } finally {
    await bridge.stop();
    await bare.stop();
    await temporal.teardown();
  }
}
