import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTracingPlugin } from '../../src/observability/tracing.js';
import { cancelUpdate, statusQuery } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

// Tracing is off by default; configured, it spans the client, the workflow and its activities.
const exporter = new InMemorySpanExporter();
let env: EsignTestEnv;
beforeAll(async () => {
  env = await startEsignTestEnv({ plugins: [createTracingPlugin('esign-test', new SimpleSpanProcessor(exporter))] });
});
afterAll(async () => {
  await env?.close();
  // The plugin registered OpenTelemetry's process-wide tracer, context and propagator; later files in this test
  // process start without them.
  trace.disable();
  context.disable();
  propagation.disable();
});

it('traces a transaction from the client start through the workflow to its activities, in one trace', async () => {
  const { handle } = await env.start(env.input());
  await expect.poll(async () => (await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
  await handle.executeUpdate(cancelUpdate, { args: [{}] });
  await handle.result();
  await expect
    .poll(() => exporter.getFinishedSpans().map((s) => s.name), { timeout: 15_000 })
    .toEqual(
      expect.arrayContaining([
        'StartWorkflow:esignTransaction',
        'RunWorkflow:esignTransaction',
        'RunActivity:uploadDocuments',
        'RunActivity:createTransaction',
      ]),
    );
  const spans = exporter.getFinishedSpans();
  const start = spans.find((s) => s.name === 'StartWorkflow:esignTransaction')!;
  const upload = spans.find((s) => s.name === 'RunActivity:uploadDocuments')!;
  expect(upload.spanContext().traceId).toBe(start.spanContext().traceId);
});
