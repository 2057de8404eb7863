// What the Temporal server stores is what an operator, a backup or a breach of
// the cluster can read. With the codec configured, nothing personal may be in
// it in clear: not in inputs, not in failure messages (which quote what a caller
// sent), not in search attributes or memo. Checked on the raw history of a
// transaction that fails and of one that completes, with titles that hold a
// signer's name and address, as integrators write them.
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AesGcmCodec, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { encryptingDataConverter } from '../../src/codec/data-converter.js';
import { esignCompletedSignal } from '../../src/definitions/transaction.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';

const codec = new AesGcmCodec(parseCodecKeys(newCodecKeys('2026-11')));
const PERSONAL = ['Jane Roe', 'jane.roe@example.com', 'Severance', 'ada@example.com', 'Lovelace', 'alan@example.com', 'Turing'];
let env: EsignTestEnv;

beforeAll(async () => {
  env = await startEsignTestEnv({ dataConverter: encryptingDataConverter(codec) });
});
afterAll(() => env?.close());

/** Everything the server keeps for a workflow, as a plain client (without the codec) reads it. */
async function stored(workflowId: string): Promise<string> {
  const handle = env.temporal.client.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  // Raw: search attributes and memo as stored, without decoding (a plain client cannot decode the memo).
  const description = await env.temporal.client.workflowService.describeWorkflowExecution({
    namespace: env.temporal.namespace,
    execution: { workflowId },
  });
  const bytes = (_k: string, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v);
  return JSON.stringify({ history, description }, bytes);
}

function expectNothingPersonal(text: string): void {
  for (const value of PERSONAL) {
    const at = text.indexOf(value);
    expect(at, `"${value}" is stored in clear: …${text.slice(Math.max(0, at - 300), at + 100)}…`).toBe(-1);
  }
}

it('a failing transaction stores its failure encrypted, and the codec reads it back naming ids only', async () => {
  const input = env.input();
  input.documents[0]!.title = 'Severance agreement - Jane Roe (jane.roe@example.com)';
  input.documents[0]!.source = { path: join(env.archiveDir, '..', 'jane-roe-missing.pdf') };
  const { handle } = await env.start(input);

  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const text = await stored(handle.workflowId);
  expect(text).toContain('Encoded failure');
  expectNothingPersonal(text);

  // The integrator, with the codec, reads why; the message names the document by its index, not its title.
  const cause = (err as WorkflowFailedError).cause;
  const message = `${cause?.message ?? ''} ${(cause?.cause as Error | undefined)?.message ?? ''}`;
  expect(message).toMatch(/documents\[0\]: file not found/);
  expectNothingPersonal(message);
});

it('a completed transaction stores nothing personal in clear, search attributes and memo included', async () => {
  const input = env.input();
  input.title = 'Severance agreement - Jane Roe (jane.roe@example.com)';
  input.documents[0]!.title = 'Severance agreement - Jane Roe';
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
  expect((await handle.result()).status).toBe('completed');

  const text = await stored(handle.workflowId);
  expect(text).toContain(input.referenceId); // ids stay readable for operators
  expectNothingPersonal(text);
});
