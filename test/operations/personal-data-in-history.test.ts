// What the Temporal server stores is what an operator, a backup or a breach of
// the cluster can read. With the codec configured, nothing personal may be in
// it in clear: not in inputs, not in failure messages (which quote what a caller
// sent), not in search attributes, memo, activity summaries or the visibility
// store. Checked on the raw history of a transaction that fails and of one that
// completes, with titles that hold a signer's name and address, as integrators
// write them. Then erasure (docs/records.md): once a referenceId's data keys are
// destroyed, nobody reads its histories again (the client, the codec endpoint the
// Web UI decodes through, the Temporal CLI), while a neighbour's stay readable.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { newCodecKeys, parseCodecKeys, type AesGcmCodec } from '../../src/codec/aes-gcm-codec.js';
import { PayloadErased } from '../../src/codec/data-keys.js';
import { buildCodecServer } from '../../src/codec/server.js';
import type { LegalHold } from '../../src/definitions/records.js';
import { eventLogIdFor } from '../../src/definitions/event-log.js';
import { esignCompletedSignal } from '../../src/definitions/transaction.js';
import { eraseReference, ErasureRefused } from '../../src/records/erase.js';
import { startDataKeyEnv, type DataKeyEnv } from '../support/data-key-env.js';
import { completedWebhook, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import type { EventReceiver } from '../support/event-receiver.js';

const masters = parseCodecKeys(newCodecKeys('2026-11'));
let codec: AesGcmCodec;
const PERSONAL = ['Jane Roe', 'jane.roe@example.com', 'Severance', 'ada@example.com', 'Lovelace', 'alan@example.com', 'Turing'];
let env: EsignTestEnv;
let receiver: EventReceiver;
let client: Client;
let stack: DataKeyEnv | undefined;

beforeAll(async () => {
  stack = await startDataKeyEnv(masters);
  ({ codec, env, receiver, client } = stack);
}, 60_000);
afterAll(() => stack?.close());

/** Everything the server keeps for a workflow, as a plain client (without the codec) reads it. */
async function stored(workflowId: string): Promise<string> {
  const handle = env.temporal.client.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  // Raw: search attributes and memo as stored, without decoding (a plain client cannot decode the memo).
  const description = await env.temporal.client.workflowService.describeWorkflowExecution({
    namespace: env.temporal.namespace,
    execution: { workflowId },
  });
  // The visibility store, as a list answers it (search attributes, memo).
  const listed = await env.temporal.client.workflowService.listWorkflowExecutions({
    namespace: env.temporal.namespace,
    query: `WorkflowId = '${workflowId}'`,
  });
  const bytes = (_k: string, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v);
  return JSON.stringify({ history, description, listed }, bytes);
}

/** Starts a transaction and signs it to its end (`between`: what to do once it awaits signatures). */
async function signed(input: ReturnType<EsignTestEnv['input']>, between?: () => Promise<void>) {
  const { handle } = await env.start(input);
  const status = await waitForPhase(handle, 'awaiting_signatures');
  await between?.();
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
  expect((await handle.result()).status).toBe('completed');
  return { handle, transactionId: status.transactionId! };
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
  const { handle } = await signed(input);

  const text = await stored(handle.workflowId);
  expect(text).toContain(input.referenceId); // ids stay readable for operators
  expectNothingPersonal(text);
});

it("erasure: a referenceId's histories are unreadable by the client, the codec endpoint and the CLI; a neighbour's are not", async () => {
  const erased = env.input({ callbackUrl: receiver.url });
  erased.title = 'Severance agreement - Jane Roe (jane.roe@example.com)';
  const neighbour = env.input({ callbackUrl: receiver.url });
  const holds: LegalHold[] = [];
  const deps = { client, dataKeys: codec.dataKeys!, holds: async () => holds, archives: new LocalArchiveStore(env.archiveDir) };

  const { handle, transactionId } = await signed(erased, () =>
    expect(eraseReference(deps, erased.referenceId, 'dpo:kim')).rejects.toThrow(/still runs: esign-/),
  );
  const other = await signed(neighbour);
  await expect.poll(() => receiver.of('transaction.completed').filter((e) => e.data.referenceId === erased.referenceId).length).toBe(1);

  // A hold on the referenceId, or on its provider transaction, refuses it; nothing is destroyed.
  holds.push({
    id: 'h1',
    scope: 'transaction',
    target: transactionId,
    reason: 'matter 7',
    by: 'legal:sam',
    placedAt: new Date().toISOString(),
  });
  await expect(eraseReference(deps, erased.referenceId, 'dpo:kim')).rejects.toThrow(/is held: h1/);
  holds[0] = { ...holds[0]!, released: { at: new Date().toISOString(), by: 'legal:sam', reason: 'settled' } };
  // Its event log stays to redeliver: refused, unless the erasure ends it.
  const refused = await eraseReference(deps, erased.referenceId, 'dpo:kim').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ErasureRefused);
  expect((refused as Error).message).toContain('--close-event-log');

  const report = await eraseReference(deps, erased.referenceId, 'dpo:kim', { closeEventLog: true });
  expect(report.keys.map((k) => k.workflowId).sort()).toEqual([eventLogIdFor(erased.referenceId), handle.workflowId].sort());
  expect(report.workflows.map((w) => w.workflowId)).toEqual(expect.arrayContaining([handle.workflowId, eventLogIdFor(erased.referenceId)]));
  expect(report.archives.map((a) => [a.transactionId, a.kept, typeof a.retainedUntil])).toEqual([[transactionId, true, 'string']]);
  // Erasing again destroys nothing more.
  expect((await eraseReference(deps, erased.referenceId, 'dpo:kim')).keys).toEqual([]);

  // The client (the codec) cannot read it; the neighbour reads as before.
  await expect(handle.result()).rejects.toBeInstanceOf(PayloadErased);
  expect(await other.handle.result()).toMatchObject({ status: 'completed' });

  // The codec endpoint (the Web UI's decode path) shows the erased payloads as erased, the neighbour's as they are.
  const server = await buildCodecServer({ codec, corsOrigins: [] });
  const url = await server.listen({ host: '127.0.0.1', port: 0 });
  try {
    const startInput = async (workflowId: string) =>
      (await env.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!.input!
        .payloads!;
    const decode = async (workflowId: string) => {
      const payloads = (await startInput(workflowId)).map((p) => ({
        metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
        data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
      }));
      const res = await fetch(`${url}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': env.temporal.namespace },
        body: JSON.stringify({ payloads }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { payloads: { data: string }[] };
      return body.payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8')).join('\n');
    };
    const gone = await decode(handle.workflowId);
    expect(gone).toContain('[erased: data key');
    expectNothingPersonal(gone);
    expect(await decode(other.handle.workflowId)).toContain('ada@example.com');

    // The Temporal CLI through the endpoint: the history shows, its payloads erased.
    const shown = await new Promise<string>((resolve) =>
      execFile(
        inject('temporalCliPath')!,
        [
          'workflow',
          'show',
          '--workflow-id',
          handle.workflowId,
          '--address',
          inject('temporalAddress'),
          '--codec-endpoint',
          url,
          '-o',
          'json',
        ],
        { timeout: 30_000 },
        (_error, stdout, stderr) => resolve(`${stdout}${stderr}`),
      ),
    );
    // Its JSON keeps each payload's data in base64: read them all.
    const datas: string[] = [];
    JSON.parse(shown, (key, value: unknown) => {
      if (key === 'data' && typeof value === 'string') datas.push(Buffer.from(value, 'base64').toString('utf8'));
      return value;
    });
    expect(datas.filter((d) => d.startsWith('"[erased: data key')).length).toBeGreaterThan(5);
    expectNothingPersonal(datas.join('\n'));
  } finally {
    await server.close();
  }
  // What the server keeps of it, raw, holds nothing personal either.
  expectNothingPersonal(await stored(handle.workflowId));
  expectNothingPersonal(await stored(eventLogIdFor(erased.referenceId)));
}, 180_000);
