// A backend whose codec key no worker holds must hear so before its transaction starts: otherwise the workflow's
// every task fails to decode its input, retried without end, and the run stays Running with nothing to say why
// (issue 40, defect 4). Workers name the key ids they decrypt in their identity; the client reads them from the task
// queue's pollers (src/client/codec-check.ts). Real server, real workers.
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { dataConverterFromEnv, encryptingDataConverter } from '../../src/codec/data-converter.js';
import { describeIfExists } from '../../src/client/describe.js';
import { CodecKeyUnknown } from '../../src/client/codec-check.js';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { workflowIdFor } from '../../src/definitions/transaction.js';
import { eventually } from '../support/eventually.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

const workersKey = newCodecKeys('k-2026');
const otherKey = newCodecKeys('k-other');
const converter = (keys: string) => encryptingDataConverter(new AesGcmCodec(parseCodecKeys(keys), { plaintext: 'refuse' }));

let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({ dataConverter: converter(workersKey) });
  // The worker polls its queue before a start is checked against it (with nobody polling, nothing can be told).
  await eventually(
    'the worker polls its queue',
    async () => {
      const { pollers } = await env.temporal.client.workflowService.describeTaskQueue({
        namespace: env.temporal.namespace,
        taskQueue: { name: env.taskQueue },
        taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      return (pollers ?? []).some((p) => p.identity?.includes('esign-codec-keys=k-2026'));
    },
    20_000,
    200,
  );
});
afterAll(async () => {
  await env?.close();
});

const clientWith = (keys: string) =>
  new Client({ connection: env.temporal.client.connection, namespace: env.temporal.namespace, dataConverter: converter(keys) });

it('a client encrypting with a key no worker holds is refused before anything starts, naming both', async () => {
  for (const keys of [otherKey, `${otherKey},${workersKey}`]) {
    const input = env.input();
    const refused = startEsignTransaction(clientWith(keys), input, { taskQueue: env.taskQueue });
    await expect(refused).rejects.toBeInstanceOf(CodecKeyUnknown);
    await expect(refused).rejects.toThrow(/"k-other", which no worker .*\(they hold "k-2026"\)/);
    expect(await describeIfExists(env.temporal.client, workflowIdFor(input.referenceId))).toBeUndefined();
  }
});

it("a client with the workers' key (also as a second one, during a rotation) starts", async () => {
  for (const keys of [workersKey, `${workersKey},${otherKey}`]) {
    const { handle } = await startEsignTransaction(clientWith(keys), env.input(), { taskQueue: env.taskQueue });
    await waitForPhase(handle, 'awaiting_signatures');
  }
});

it('a backend that must encrypt is told when no key is configured, naming the variable', () => {
  expect(dataConverterFromEnv({}, {})).toBeUndefined();
  expect(() => dataConverterFromEnv({}, { required: true })).toThrow(/ESIGN_CODEC_KEYS/);
});
