// A run whose payloads no worker can decode ends visibly: started with a codec key the workers lack (the client's
// own check bypassed, as another SDK would), its workflow task fails on every attempt and the run stays Running.
// getEsignStatus and `esign status` read it as `phase: 'stuck'` with the worker's reason, from the server alone (a
// client with no codec key at all reads it); the worker logs it once per workflow and counts it; and the run moves
// on once a worker holds the key, which is why it is left retrying (docs/decisions/stuck-runs.md).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { LogMetadata, MetricMeter, MetricTags } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { AesGcmCodec, CodecKeyUnknown, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { encryptingDataConverter } from '../../src/codec/data-converter.js';
import { getEsignStatus } from '../../src/client/transactions.js';
import { WORKFLOW_TYPE, workflowIdFor, type EsignRunFailure, type EsignTransactionStatus } from '../../src/definitions/transaction.js';
import { EsignReferenceId, EsignStatus } from '../../src/definitions/search-attributes.js';
import { EsignClient } from '../../src/esign/client.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { esignCli } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { connectToTestServer, uniqueTaskQueue, type TemporalTestContext } from '../support/temporal.js';

const workerKeys = newCodecKeys('k-worker');
const goneKeys = newCodecKeys('k-gone');
const logged: { message: string; meta: LogMetadata | undefined }[] = [];
const counted: { name: string; value: number; tags: MetricTags | undefined }[] = [];
/** The worker's metrics as a Prometheus scrape would add them up. */
const meter = {
  createCounter: (name: string) => ({ add: (value: number, tags?: MetricTags) => counted.push({ name, value, tags }) }),
} as unknown as MetricMeter;
const record = (message: string, meta?: LogMetadata) => logged.push({ message, meta });
const logger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: record,
};

let temporal: TemporalTestContext;
let provider: EsignClient;
let archiveDir: string;
const taskQueue = uniqueTaskQueue('stuck');
const running: { worker: Worker; done: Promise<void> }[] = [];

async function startWorker(keys: string) {
  const worker = await createEsignWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    // No provider behind it: the runs here never reach one.
    deps: { client: provider, archive: new LocalArchiveStore(archiveDir) },
    dataConverter: encryptingDataConverter(new AesGcmCodec(parseCodecKeys(keys), { plaintext: 'refuse' })),
    undecodable: { logger, metricMeter: meter },
  });
  running.push({ worker, done: worker.run() });
  return worker;
}

beforeAll(async () => {
  temporal = await connectToTestServer();
  provider = new EsignClient({ baseUrl: 'http://127.0.0.1:9', token: 'unused' });
  archiveDir = await mkdtemp(join(tmpdir(), 'esign-stuck-'));
  await startWorker(workerKeys);
});
afterAll(async () => {
  for (const { worker, done } of running) {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await done;
  }
  await provider?.close();
  await temporal?.close();
  if (archiveDir) await rm(archiveDir, { recursive: true, force: true });
});

const referenceId = `stuck-${Date.now().toString(36)}`;
const input: EsignTransactionInput = {
  referenceId,
  documents: [{ title: 'Contract', source: { path: '/nowhere/contract.pdf' }, tags: [] }],
  participants: [
    { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', authenticationType: 'none', twoFactorContact: 'email' },
  ],
};

it('the codec names the key it lacks with a typed error', async () => {
  const [payload] = await new AesGcmCodec(parseCodecKeys(goneKeys)).encode([{ metadata: {}, data: new Uint8Array([1]) }]);
  const refused = await new AesGcmCodec(parseCodecKeys(workerKeys)).decode([payload!]).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(CodecKeyUnknown);
  expect((refused as Error).name).toBe('CodecKeyUnknown');
  expect((refused as Error).message).toContain('no codec key with id "k-gone"');
});

it('reads a run started with a key no worker holds as stuck, with the worker’s reason, within seconds', async () => {
  // What another SDK would do: start it encrypted with its own key, asking nobody.
  const foreign = new Client({
    connection: temporal.client.connection,
    namespace: temporal.namespace,
    dataConverter: encryptingDataConverter(new AesGcmCodec(parseCodecKeys(goneKeys))),
  });
  await foreign.workflow.start(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: workflowIdFor(referenceId),
    args: [input],
    typedSearchAttributes: [
      { key: EsignReferenceId, value: referenceId },
      { key: EsignStatus, value: 'uploading' },
    ],
  });

  // As soon as its first attempt has failed (the server's own record), the status says so, read by a client
  // without any codec key: nothing of the run is decoded.
  const started = Date.now();
  const handle = temporal.client.workflow.getHandle(workflowIdFor(referenceId));
  await eventually('a failed attempt', async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= 2, 15_000, 100);
  const status = await getEsignStatus(temporal.client, referenceId);
  expect(Date.now() - started).toBeLessThan(15_000);
  expect(status).toMatchObject({
    phase: 'stuck',
    referenceId,
    result: null,
    failure: { closedAs: null, type: 'CodecKeyUnknown' },
  } satisfies Partial<Omit<EsignTransactionStatus, 'failure'>> & { failure: Partial<EsignRunFailure> });
  expect(status.failure!.message).toContain('no codec key with id "k-gone"');
  expect(status.failure!.attempts).toBeGreaterThanOrEqual(2);
  expect(Date.parse(status.failure!.since!)).toBeLessThanOrEqual(Date.now());
  expect(status.summary).toMatch(
    /^Stuck in uploading: its workflow task fails on every attempt \(attempt \d+, since .+, CodecKeyUnknown\): no codec key/,
  );
});

it('`esign status` shows it stuck, with the reason', async () => {
  const esign = esignCli(() => ({ ESIGN_TASK_QUEUE: taskQueue }));
  const json = await esign('--json', 'status', referenceId);
  expect(json.code, json.stderr).toBe(0);
  expect(JSON.parse(json.stdout)).toMatchObject({ phase: 'stuck', failure: { type: 'CodecKeyUnknown' } });
  const text = await esign('status', referenceId);
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toMatch(/^phase\s+stuck$/m);
  expect(text.stdout).toMatch(/^failure\s+CodecKeyUnknown: no codec key with id "k-gone"/m);
});

it('the worker logs it once per workflow, at error level, and counts it', async () => {
  // A retry decodes again (and fails again): still one report.
  const handle = temporal.client.workflow.getHandle(workflowIdFor(referenceId));
  await eventually('another attempt', async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= 3, 30_000, 250);
  expect(logged).toHaveLength(1);
  expect(logged[0]!.message).toContain(`workflow ${workflowIdFor(referenceId)} has payloads this worker cannot decode`);
  expect(logged[0]!.meta).toMatchObject({ workflowId: workflowIdFor(referenceId), reason: 'unknown_key' });
  // Nothing of the input (names, e-mail addresses) in what is logged.
  expect(JSON.stringify(logged)).not.toMatch(/Lovelace|ada@example\.com/);
  expect(counted).toEqual([{ name: 'esign_undecodable_workflows', value: 1, tags: { reason: 'unknown_key' } }]);
}, 40_000);

it('moves on once a worker holds the key', async () => {
  running[0]!.worker.shutdown();
  await running[0]!.done;
  await startWorker(`${workerKeys},${goneKeys}`);
  // Its input is decoded at last, and refused for what it is (a document outside the worker's roots).
  const status = await eventually(
    'the run to move on',
    async () => {
      const s = await getEsignStatus(temporal.client, referenceId, 2_000);
      return s.phase !== 'stuck' && s;
    },
    45_000,
    500,
  );
  expect(status.phase).toBe('failed');
  expect(status.failure).toMatchObject({ closedAs: 'failed' });
}, 60_000);
