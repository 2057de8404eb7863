/**
 * A running transaction that does not move: its workflow task fails on every attempt (payloads encrypted with a key
 * no worker holds, workflow code that no longer replays its history), so the run stays Running, its status query
 * fails (a query is answered by the same workflow code) and `result()` never returns. Told from what the server
 * keeps, without a worker and without decoding the run's payloads: the pending workflow task's attempt count
 * (describe) and the failure of the streak's first attempt, the last WorkflowTaskFailed event (the server writes
 * only that one; later attempts leave no event). docs/decisions/stuck-runs.md says why such a run is left retrying.
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import proto from '@temporalio/proto';
import type { EsignRunFailure } from '../definitions/transaction.js';

// A default import: the package is CommonJS, which plain Node (the CLI, a backend) cannot import by name.
const { EventType } = proto.temporal.api.enums.v1;

/** What the failure converter stores in place of an encrypted message (src/codec/failure-converter.ts). */
const ENCODED_MESSAGE = 'Encoded failure';

/** How many of the run's last events are read for the failure: a failing task is the history's end, give or take a few. */
const LAST_EVENTS = 20;

/**
 * The failure of a run whose workflow task has failed and not completed since, or undefined when its task is not
 * failing (none pending, a first attempt, or the streak is of timeouts: a worker busy or gone, not a refusal).
 */
export async function stuckRunFailure(client: Client, described: WorkflowExecutionDescription): Promise<EsignRunFailure | undefined> {
  const attempts = described.raw.pendingWorkflowTask?.attempt ?? 0;
  if (attempts < 2) return undefined;
  const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId: described.workflowId, runId: described.runId },
    maximumPageSize: LAST_EVENTS,
  });
  // The latest end of a workflow task says how the current streak began.
  const ended = page.history?.events?.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED ||
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ||
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
  );
  const failed = ended?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED ? ended.workflowTaskFailedEventAttributes : undefined;
  if (!failed) return undefined;
  const failure = failed.failure;
  const seconds = ended?.eventTime?.seconds;
  return {
    closedAs: null,
    type: failure?.applicationFailureInfo?.type || null,
    message: await readableMessage(client, failure),
    attempts,
    ...(seconds != null ? { since: new Date(Number(seconds) * 1000).toISOString() } : {}),
  };
}

/**
 * The failure's message. The codec's errors are stored in clear (the usual reason a run is stuck); any other is
 * encrypted, and decoded here when this client holds the key the worker encrypted it with, else said to be so.
 */
async function readableMessage(client: Client, failure: temporal.api.failure.v1.IFailure | null | undefined): Promise<string> {
  const message = failure?.message ?? '';
  if (message !== ENCODED_MESSAGE || !failure?.encodedAttributes) return message || '(no message)';
  try {
    const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
    let payloads = [failure.encodedAttributes];
    for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    const attributes = payloadConverter.fromPayload<{ message?: unknown }>(payloads[0]!);
    if (typeof attributes?.message === 'string') return attributes.message;
  } catch {
    // Not one of this client's keys: what is known is that it is encrypted.
  }
  return `${ENCODED_MESSAGE} (encrypted: read it with the workers' codec keys, docs/codec.md)`;
}
