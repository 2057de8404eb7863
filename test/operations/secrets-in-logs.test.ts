// A full run with the worker and the bridge in their own processes, verbose
// logging, and failures on the way (rejected webhooks, provider 429s and 5xx):
// no secret and nothing personal may appear in anything they print.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { launch, type Launched } from '../../tools/support/launch.js';
import { AesGcmCodec, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { postWebhook, signedHeaders } from '../support/bridge.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { connectToTestServer, freePort, type TemporalTestContext, uniqueTaskQueue } from '../support/temporal.js';

const codecKey = randomBytes(32).toString('base64');
const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
const signerPassword = `pw-${randomBytes(9).toString('hex')}`;
const output: string[] = [];
const children: Launched[] = [];
let temporal: TemporalTestContext;
let sandbox: TestSandbox;

/** Starts a service with the tools' launcher, keeping everything it prints for the final check. */
async function start(entry: string, env: Record<string, string>, ready: RegExp): Promise<void> {
  const log = new Writable({
    write(chunk: Buffer, _encoding, done) {
      output.push(chunk.toString());
      done();
    },
  });
  children.push(await launch(entry, { env, ready, log }));
}

beforeAll(async () => {
  temporal = await connectToTestServer();
  sandbox = await startTestSandbox({ webhookSecret });
}, 60_000);
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  await sandbox?.close();
  await temporal?.close();
});

it('prints no bearer token, webhook secret, codec key or signer password in any log or error', async () => {
  const [pdf] = await samplePdfFiles(['Confidential']);
  const taskQueue = uniqueTaskQueue('secrets');
  const bridgePort = String(await freePort());
  const common = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    ESIGN_TASK_QUEUE: taskQueue,
    ESIGN_CODEC_KEYS: `k:${codecKey}`,
    LOG_LEVEL: 'debug',
    ESIGN_METRICS_ADDRESS: '',
  };
  await start(
    'src/bridge/main.ts',
    {
      ...common,
      BRIDGE_PORT: bridgePort,
      ESIGN_WEBHOOK_SECRETS: webhookSecret,
      ESIGN_PROVIDER_URL: sandbox.running.url,
      ESIGN_PROVIDER_TOKEN: sandbox.token,
      BRIDGE_LOG: 'true',
    },
    /listening/,
  );
  const trustAnchors = join(dirname(pdf!), 'sandbox-ca.pem');
  await writeFile(trustAnchors, sandbox.running.caCertificate);
  await start(
    'src/worker/main.ts',
    {
      ...common,
      ESIGN_PROVIDER_URL: sandbox.running.url,
      ESIGN_PROVIDER_TOKEN: sandbox.token,
      ESIGN_DOCUMENT_ROOTS: dirname(pdf!),
      ESIGN_ARCHIVE_DIR: `${dirname(pdf!)}/archive`,
      ESIGN_TRUST_ANCHORS: trustAnchors,
      ESIGN_SEAL_PINS: sandbox.running.sealPins.join(','),
    },
    /worker polling/,
  );
  const bridgeUrl = `http://127.0.0.1:${bridgePort}`;
  sandbox.running.webhookUrls.push(`${bridgeUrl}/webhooks/esign`);

  // Failures on the way: rejected webhooks, and a provider answering 429 and 5xx for a while.
  const body = JSON.stringify({
    event: 'esign-completed',
    entity: 'esign',
    data: { notificationId: crypto.randomUUID(), entity_id: crypto.randomUUID(), transaction_id: 'x' },
  });
  expect((await postWebhook(bridgeUrl, body, signedHeaders(`whsec_${randomBytes(32).toString('base64')}`, body))).status).toBe(401);
  expect((await postWebhook(bridgeUrl, body, { ...signedHeaders(webhookSecret, body), 'webhook-signature': 'v1,forged' })).status).toBe(
    401,
  );
  sandbox.running.faults.configure({ rateLimitRate: 0.5, error5xxRate: 0.3, retryAfterSeconds: 1, seed: 3 });

  const client = new Client({
    connection: temporal.client.connection,
    dataConverter: { payloadCodecs: [new AesGcmCodec(parseCodecKeys(`k:${codecKey}`))] },
  });
  const { handle } = await startEsignTransaction(
    client,
    {
      referenceId: `secrets-${Date.now()}`,
      documents: [
        {
          title: 'Offer letter - Pat Secretary (pat@example.com)',
          source: { path: pdf! },
          tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
        },
      ],
      participants: [
        {
          email: 'pat@example.com',
          firstName: 'Pat',
          lastName: 'Secret',
          authenticationType: 'personal-password',
          personalPassword: signerPassword,
          twoFactorContact: 'email',
        },
      ],
      reconcileInterval: '1 day',
    },
    { taskQueue },
  );
  let status = await handle.query(statusQuery);
  await expect
    .poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 60_000, interval: 250 })
    .toBe('awaiting_signatures');
  sandbox.running.faults.configure({});
  await sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);
  expect((await handle.result()).status).toBe('completed');

  const everything = output.join('');
  expect(everything).toMatch(/ProviderUnavailable|HTTP 429|HTTP 5\d\d|rejected/); // the failures were logged…
  for (const secret of [sandbox.token, webhookSecret, webhookSecret.slice(6), codecKey, signerPassword]) {
    expect(everything.includes(secret), 'a secret appeared in the logs').toBe(false); // …without a secret
  }
  // …and without personal data: the signer's address and name, a title that names them.
  for (const personal of ['pat@example.com', 'Secretary', 'Offer letter']) {
    expect(everything.includes(personal), `"${personal}" appeared in the logs`).toBe(false);
  }
}, 120_000);
