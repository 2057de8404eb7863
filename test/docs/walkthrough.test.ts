// The README walkthrough, in a real browser: a transaction is signed by both
// signers through the signing page, and the Temporal Web UI shows it
// completed, its payloads decoded through the codec endpoint. With
// SCREENSHOT_DIR=docs/images (`npm run screenshots`) it refreshes the README's pictures.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startDevServer } from '../../tools/temporal/dev-server.js';
import type { Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import type { RunningBridge } from '../../src/bridge/index.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { buildCodecServer } from '../../src/codec/server.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { issueSigningUrlUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { launchChromium } from '../support/browser.js';
import { startTestBridge } from '../support/bridge.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const shots = process.env.SCREENSHOT_DIR ?? 'test-artifacts';
const codec = new AesGcmCodec(parseCodecKeys(newCodecKeys('walkthrough')));
let temporal: TestWorkflowEnvironment;
let uiUrl: string;
let codecServer: FastifyInstance;
let sandbox: TestSandbox;
let bridge: RunningBridge;
let worker: Worker;
let running: Promise<void>;
let browser: Browser;
let client: Client;

beforeAll(async () => {
  codecServer = await buildCodecServer({ codec, corsOrigins: [] });
  const codecUrl = await codecServer.listen({ host: '127.0.0.1', port: 0 });
  temporal = await startDevServer({
    cliPath: inject('temporalCliPath'),
    ui: true,
    extraArgs: ['--ui-codec-endpoint', codecUrl],
  });
  const port = Number(temporal.address.split(':').at(-1));
  uiUrl = `http://127.0.0.1:${port + 1000}`;
  // The UI calls the codec from the browser: allow its origin now that it is known.
  await codecServer.close();
  codecServer = await buildCodecServer({ codec, corsOrigins: [uiUrl, uiUrl.replace('127.0.0.1', 'localhost')] });
  await codecServer.listen({ host: '127.0.0.1', port: Number(new URL(codecUrl).port) });

  sandbox = await startTestSandbox();
  const [pdf] = await samplePdfFiles(['Service agreement']);
  const dataConverter = { payloadCodecs: [codec] };
  worker = await createEsignWorker({
    connection: temporal.nativeConnection,
    taskQueue: 'walkthrough',
    deps: {
      minReconcileInterval: '1 second',
      client: sandbox.client,
      archive: new LocalArchiveStore(join(dirname(pdf!), 'archive')),
      documentRoots: [dirname(pdf!)],
    },
    dataConverter,
  });
  running = worker.run();
  bridge = await startTestBridge({
    address: temporal.address,
    taskQueue: 'walkthrough',
    secrets: [sandbox.running.webhookSecret],
    provider: { url: sandbox.running.url, token: sandbox.token },
  });
  sandbox.running.webhookUrls.push(`${bridge.url}/webhooks/esign`);
  client = new Client({ connection: temporal.connection, dataConverter });
  browser = await launchChromium();
  await mkdir(shots, { recursive: true });
  process.env.WALKTHROUGH_PDF = pdf;
}, 180_000);

afterAll(async () => {
  delete process.env.WALKTHROUGH_PDF;
  await browser?.close();
  await bridge?.stop();
  worker?.shutdown();
  await running;
  await sandbox?.close();
  await codecServer?.close();
  await temporal?.teardown();
});

it('signs a transaction in the browser and shows it completed, decoded, in the Temporal Web UI', async () => {
  const referenceId = `walkthrough-${Date.now()}`;
  const { handle } = await startEsignTransaction(
    client,
    {
      referenceId,
      title: 'Service agreement',
      documents: [
        {
          title: 'Service agreement',
          source: { path: process.env.WALKTHROUGH_PDF! },
          tags: [
            { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 36, page: 0, signerIndex: 0 },
            { type: 'DATETEMPLATE', x: 72, y: 90, width: 120, height: 20, page: 0, signerIndex: 0 },
            { type: 'SIGNATURETEMPLATE', x: 340, y: 120, width: 200, height: 36, page: 0, signerIndex: 1 },
          ],
        },
      ],
      participants: [
        { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', authenticationType: 'none', twoFactorContact: 'email' },
        { firstName: 'Alan', lastName: 'Turing', email: 'alan@example.com', authenticationType: 'none', twoFactorContact: 'email' },
      ],
      reconcileInterval: '1 day', // only the webhook, through the bridge, can finish it
      iframeStyle: { primaryColor: '#2f5bd3' },
    },
    { taskQueue: 'walkthrough' },
  );
  let status = await handle.query(statusQuery);
  await expect.poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  for (const [i, participant] of status.participants.entries()) {
    const { url } = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [participant.id] }] });
    await page.goto(url);
    await page.locator('body[data-pages-rendered="true"]').waitFor();
    const tags = page.locator('button.tag:not([disabled])');
    const count = await tags.count();
    expect(count).toBeGreaterThan(0);
    for (let t = 0; t < count; t++) await page.locator('button.tag:not([disabled])').first().click();
    if (i === 0) await page.screenshot({ path: join(shots, 'signing-page.png') });
    await page.locator('button.finish').click();
    // The last signature completes the transaction (every PDF sealed at B-LTA) before the page hears back.
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toContain('Thank you');
  }
  const result = await handle.result();
  expect(result.status).toBe('completed');

  await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(handle.workflowId)}`);
  await expect.poll(async () => (await page.locator('body').innerText()).includes('Completed'), { timeout: 30_000 }).toBe(true);
  await page.screenshot({ path: join(shots, 'temporal-ui-completed.png') });
  // Input and result are encrypted at rest; the UI shows them decoded through the codec endpoint.
  await expect.poll(async () => (await page.locator('body').innerText()).includes('"status": "completed"'), { timeout: 30_000 }).toBe(true);
  expect(await page.locator('body').innerText()).toContain('"title": "Service agreement"');

  await page.goto(`${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(`EsignStatus = "completed"`)}`);
  await expect.poll(async () => (await page.locator('body').innerText()).includes(handle.workflowId), { timeout: 30_000 }).toBe(true);
  await page.screenshot({ path: join(shots, 'temporal-ui-list.png') });
  await page.close();
}, 180_000);
