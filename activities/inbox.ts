import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { describeIfExists } from '../src/client/describe.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { WORKFLOW_TYPE, workflowIdFor, type EsignTransactionResult } from '../src/definitions/transaction.js';
import {
  LATE_COMPLETION_WORKFLOW_TYPE,
  lateCompletionIdFor,
  type EsignLateCompletionWorkflow,
  type LateCompletionInput,
} from '../src/definitions/late-completion.js';
import type { TransactionOwner } from '../src/definitions/inbox.js';
import { EsignTransactionId } from '../src/definitions/search-attributes.js';
import { FailureType } from '../src/failures.js';

/**
 * How long the owner lookup gives visibility to show an ended run, from its first attempt: well past the lag of
 * Temporal's visibility stores (about a second for Elasticsearch's refresh), and within what its callers' retry
 * policies allow (the inbox's five attempts span 15 s).
 */
const VISIBILITY_LAG_MS = 10_000;

export function createInboxActivities() {
  return {
    /**
     * Finds the workflow that owns a completed transaction whose completion
     * no run waits for (it reached the transaction's inbox, or a later run of
     * its referenceId): `esign-<referenceId>`, the referenceId being the
     * provider's record's. A running one follows the transaction itself; for
     * an ended one (or none) the caller archives the completion late with
     * what the owner left: its outcome and uploads' hashes (its result), its
     * archive prefix and callback (its input). When the provider's record
     * could not be read, the owner is found without it (`unconfirmed`), so a
     * late copy of a completion its owner archived is still known for one.
     */
    async findTransactionOwner(input: {
      transactionId: string;
      /** The referenceId the provider's record names (null: it names none); with `unconfirmed`, the bridge's, if any. */
      referenceId: string | null;
      /**
       * The provider's record could not be read (a final 4xx, or no answer): the owner is the run that names the
       * transaction in visibility, else the workflow of `referenceId`; with neither, it cannot be told (a failure),
       * which is not "there is none".
       */
      unconfirmed?: boolean;
    }): Promise<TransactionOwner> {
      const { client, info } = Context.current();
      const none: TransactionOwner = { owner: 'ended', ownerWorkflowId: null, outcome: null };
      if (input.unconfirmed) {
        const named = await runNaming(client, input.transactionId);
        if (named?.status === 'RUNNING') return { owner: 'running', ownerWorkflowId: named.workflowId };
        if (named) return endedOwner(client, named.workflowId, named.runId, named.status, input.transactionId);
        if (!input.referenceId) {
          if (info.currentAttemptScheduledTimestampMs - info.scheduledTimestampMs < VISIBILITY_LAG_MS)
            throw ApplicationFailure.retryable(
              'no run names this transaction in visibility (yet), and the provider’s record was not read; looked for again',
              FailureType.ProviderUnavailable,
            );
          throw ApplicationFailure.nonRetryable(
            'the owner of this transaction cannot be told: no run names it in visibility, and neither the provider’s record nor the bridge gave its referenceId',
            FailureType.ProviderUnavailable,
          );
        }
      }
      if (!input.referenceId) return none;
      const workflowId = workflowIdFor(input.referenceId);
      // The referenceId may have been used again since: the run that ended naming this transaction is its owner.
      const closed = await endedRunNaming(client, workflowId, input.transactionId);
      if (closed) return endedOwner(client, workflowId, closed.runId, closed.status, input.transactionId);
      const described = await describeIfExists(client, workflowId);
      if (!described || described.type !== WORKFLOW_TYPE) return none;
      const its = described.typedSearchAttributes.get(EsignTransactionId);
      // The provider says this transaction is this referenceId's, and the workflow of the referenceId does not name it:
      // it owns another, or none yet (a run still uploading or creating, which may be a newer run as well as this
      // transaction's owner whose create has not answered). An earlier run may have owned it, one visibility may not
      // show yet (it lags): asked again a few times before concluding from this run, so a late completion is not
      // archived without what its owner left (nor again, when its owner archived it), nor left waiting for a run
      // that will never take it. Measured on the server's clock (this attempt's schedule against the first's), as a
      // test server skipping time keeps it.
      if (its !== input.transactionId && info.currentAttemptScheduledTimestampMs - info.scheduledTimestampMs < VISIBILITY_LAG_MS)
        throw ApplicationFailure.retryable(
          'the ended run that owned this transaction is not in visibility yet; looked for again',
          FailureType.ProviderUnavailable,
        );
      // A run that names another transaction is not its owner.
      if (its !== undefined && its !== input.transactionId) {
        log.warn('no ended run of this referenceId names the transaction: archived without what its owner left', {
          workflowId,
          its,
          transactionId: input.transactionId,
        });
        return none;
      }
      if (described.status.name === 'RUNNING') return { owner: 'running', ownerWorkflowId: workflowId };
      return endedOwner(client, workflowId, described.runId, described.status.name, input.transactionId);
    },

    /**
     * Starts the late-completion workflow of a transaction unless one has
     * archived it: its id is the transaction's, so a completion that comes
     * while one runs joins it; one that archived is never started again; one
     * that did not (it found the transaction not completed, failed, or was
     * terminated) is started anew, so a later real completion is archived.
     */
    async startLateCompletion(input: LateCompletionInput): Promise<{ workflowId: string; alreadyArchived?: boolean }> {
      const { client, info } = Context.current();
      const workflowId = lateCompletionIdFor(input.transactionId);
      for (let look = 1; ; look++) {
        const previous = await describeIfExists(client, workflowId);
        // A run that ended otherwise than completed (failed, terminated, timed out) may be followed by a new one.
        let reuse: 'ALLOW_DUPLICATE_FAILED_ONLY' | 'ALLOW_DUPLICATE' = 'ALLOW_DUPLICATE_FAILED_ONLY';
        if (previous?.status.name === 'COMPLETED') {
          const done = await client.workflow.getHandle<EsignLateCompletionWorkflow>(workflowId, previous.runId).result();
          if (done.status === 'archived') {
            log.info('late completion already archived this transaction', { workflowId });
            return { workflowId, alreadyArchived: true };
          }
          // It found the transaction not completed: this completion may be the real one.
          reuse = 'ALLOW_DUPLICATE';
        }
        try {
          await client.workflow.start<EsignLateCompletionWorkflow>(LATE_COMPLETION_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: info.taskQueue,
            args: [input],
            // A running one is joined; a run that completed since the look refuses the start, and is looked at again.
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: reuse,
          });
          return { workflowId };
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError) || look >= 3) throw err;
        }
      }
    },
  };
}

/**
 * The run of `workflowId` that ended (not by continue-as-new) naming `transactionId`, from visibility: with a
 * reused referenceId the latest run may be another transaction's. Undefined when visibility has none (yet), or
 * cannot be asked (a server without advanced visibility): the caller then looks at the latest run.
 */
async function endedRunNaming(
  client: Client,
  workflowId: string,
  transactionId: string,
): Promise<{ runId: string; status: string } | undefined> {
  // Ids go into the query as string literals: one that could close the literal is not looked up.
  if (/['"\\]/.test(workflowId) || /['"\\]/.test(transactionId)) return undefined;
  try {
    const query = `WorkflowId = '${workflowId}' AND ${EsignTransactionId.name} = '${transactionId}' AND ExecutionStatus != 'Running'`;
    for await (const run of client.workflow.list({ query })) {
      if (run.type === WORKFLOW_TYPE && run.status.name !== 'CONTINUED_AS_NEW') return { runId: run.runId, status: run.status.name };
    }
  } catch (err) {
    log.info('could not search visibility for the run that owned the transaction', { workflowId, error: (err as Error).message });
  }
  return undefined;
}

/**
 * The transaction workflow run that names `transactionId` (its `EsignTransactionId`), whatever its workflow id, found
 * without the provider's record: from visibility, with its status as the server has it now (visibility lags an end).
 * A run that continued as new is followed to its chain's latest run. Undefined when visibility shows none (yet), or
 * cannot be asked (a server without advanced visibility, such as the time-skipping test server).
 */
async function runNaming(
  client: Client,
  transactionId: string,
): Promise<{ workflowId: string; runId: string; status: string } | undefined> {
  // The id goes into the query as a string literal: one that could close the literal is not looked up.
  if (/['"\\]/.test(transactionId)) return undefined;
  let found: { workflowId: string; runId?: string } | undefined;
  try {
    const query = `WorkflowType = '${WORKFLOW_TYPE}' AND ${EsignTransactionId.name} = '${transactionId}'`;
    for await (const run of client.workflow.list({ query })) {
      if (run.status.name !== 'CONTINUED_AS_NEW') {
        found = { workflowId: run.workflowId, runId: run.runId };
        break;
      }
      found ??= { workflowId: run.workflowId };
    }
  } catch (err) {
    log.info('could not search visibility for the run that names the transaction', { transactionId, error: (err as Error).message });
    return undefined;
  }
  if (!found) return undefined;
  const { workflowId } = found;
  const describe = (runId?: string) =>
    client.workflow
      .getHandle(workflowId, runId)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      });
  let described = await describe(found.runId);
  if (described?.status.name === 'CONTINUED_AS_NEW') described = await describe();
  // The chain's latest run may be a later transaction's (a reused referenceId): only a run that names this one is its owner.
  if (!described || described.type !== WORKFLOW_TYPE || described.typedSearchAttributes.get(EsignTransactionId) !== transactionId)
    return undefined;
  return { workflowId, runId: described.runId, status: described.status.name };
}

/** What an ended owner left for a late completion: its outcome and uploads' hashes (result), prefix and callback (input). */
async function endedOwner(
  client: Client,
  workflowId: string,
  runId: string,
  status: string,
  transactionId: string,
): Promise<TransactionOwner> {
  let result: EsignTransactionResult | undefined;
  if (status === 'COMPLETED') {
    result = (await client.workflow.getHandle(workflowId, runId).result()) as EsignTransactionResult;
    if (result.transactionId !== null && result.transactionId !== transactionId)
      return { owner: 'ended', ownerWorkflowId: null, outcome: null };
  }
  const started = await startInput(client, workflowId, runId).catch((err: unknown) => {
    log.warn('could not read the ended workflow’s input: the late completion archives without its prefix and callback', {
      workflowId,
      error: (err as Error).message,
    });
    return undefined;
  });
  return {
    owner: 'ended',
    ownerWorkflowId: workflowId,
    outcome: result?.status ?? null,
    ...(started?.archivePrefix ? { archivePrefix: started.archivePrefix } : {}),
    ...(started?.callbackUrl ? { callbackUrl: started.callbackUrl } : {}),
    ...(result?.originals ? { originals: result.originals } : {}),
  };
}

/** The archive prefix and callback of a workflow run's input (the first event of its history, decoded as the client decodes results). */
async function startInput(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<Pick<EsignTransactionInput, 'archivePrefix' | 'callbackUrl'> | undefined> {
  const { namespace, loadedDataConverter } = client.options;
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
    skipArchival: true,
  });
  const payloads = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  if (!payloads) return undefined;
  // Through the public codec and converter interfaces: codecs decode in the reverse of their encoding order.
  let decoded = payloads.slice(0, 1);
  for (const codec of [...loadedDataConverter.payloadCodecs].reverse()) decoded = await codec.decode(decoded);
  const first = decoded[0] ? loadedDataConverter.payloadConverter.fromPayload<Partial<EsignTransactionInput> | null>(decoded[0]) : null;
  return {
    ...(typeof first?.archivePrefix === 'string' ? { archivePrefix: first.archivePrefix } : {}),
    ...(typeof first?.callbackUrl === 'string' ? { callbackUrl: first.callbackUrl } : {}),
  };
}
