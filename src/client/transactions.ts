import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Priority } from '@temporalio/common';
import { describeIssues } from '../util/zod-issues.js';
import {
  cancelUpdate,
  DEFAULT_TASK_QUEUE,
  issueSigningUrlUpdate,
  statusQuery,
  WORKFLOW_TYPE,
  type EsignTransactionResult,
  type EsignTransactionStatus,
  type EsignTransactionWorkflow,
  workflowIdFor,
  type IssuedSigningUrl,
  type IssueSigningUrlRequest,
} from '../definitions/transaction.js';
import { EsignTransactionInput } from '../transaction/input.js';
import { EsignBatchId, EsignReferenceId, EsignStatus } from '../definitions/search-attributes.js';

export class InvalidTransactionInput extends Error {
  override readonly name = 'InvalidTransactionInput';
}

export interface StartOptions {
  taskQueue?: string;
  /** Ask for signing URLs in the same round trip (update-with-start). */
  signingUrlFor?: IssueSigningUrlRequest;
  /** The bulk send it belongs to: a search attribute (`EsignBatchId`), so its transactions filter by batch. */
  batchId?: string;
  /** Task queue priority and fairness key (bulk sends queue behind interactive transactions: docs/bulk-send.md). */
  priority?: Priority;
  /**
   * Never a second run for this referenceId, even once the first has ended (a bulk row started again after a
   * crash): the start is refused with WorkflowExecutionAlreadyStartedError and the caller takes the existing one.
   */
  onlyOnce?: boolean;
}

export interface StartedTransaction {
  handle: WorkflowHandle<EsignTransactionWorkflow>;
  workflowId: string;
  signingUrl?: string;
  /** The provider's transaction, when the start came with a signing-URL request (it exists by then). */
  transactionId?: string;
}

/**
 * Starts the transaction workflow for `input.referenceId`, or returns the one
 * already running for it: a backend that starts the same referenceId twice
 * never gets a second transaction. Input is validated before anything is sent.
 */
export async function startEsignTransaction(
  client: Client,
  input: EsignTransactionInput,
  options: StartOptions = {},
): Promise<StartedTransaction> {
  const parsed = EsignTransactionInput.safeParse(input);
  if (!parsed.success) throw new InvalidTransactionInput(`invalid transaction input: ${describeIssues(parsed.error)}`);
  const workflowId = workflowIdFor(parsed.data.referenceId);
  const startOptions = {
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId,
    args: [input] as [EsignTransactionInput],
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    ...(options.onlyOnce ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const } : {}),
    memo: {
      title: parsed.data.title ?? parsed.data.documents.map((d) => d.title).join(', '),
      participantCount: parsed.data.participants.length,
    },
    typedSearchAttributes: [
      { key: EsignReferenceId, value: parsed.data.referenceId },
      { key: EsignStatus, value: 'uploading' },
      ...(options.batchId ? [{ key: EsignBatchId, value: options.batchId }] : []),
    ],
    ...(options.priority ? { priority: options.priority } : {}),
  };
  if (options.signingUrlFor) {
    const operation = new WithStartWorkflowOperation<EsignTransactionWorkflow>(WORKFLOW_TYPE, startOptions);
    const { url, transactionId } = await client.workflow.executeUpdateWithStart(issueSigningUrlUpdate, {
      args: [options.signingUrlFor],
      startWorkflowOperation: operation,
    });
    return { handle: await operation.workflowHandle(), workflowId, signingUrl: url, ...(transactionId ? { transactionId } : {}) };
  }
  const handle = await client.workflow.start<EsignTransactionWorkflow>(WORKFLOW_TYPE, startOptions);
  return { handle, workflowId };
}

/**
 * A transaction's status. An ended one is still asked (its participants, its counts), but only for a few seconds:
 * a query needs a worker of the version the run ended on, and once that version is retired none answers, so its
 * result (kept by the server, no worker needed) says how it ended instead (`fromResult`).
 */
export async function getEsignStatus(client: Client, referenceId: string, endedQueryMs = 5_000): Promise<EsignTransactionStatus> {
  const handle = getEsignTransaction(client, referenceId);
  const { status } = await handle.describe();
  if (status.name === 'RUNNING') return handle.query(statusQuery);
  try {
    return await client.withDeadline(Date.now() + endedQueryMs, () => handle.query(statusQuery));
  } catch {
    const result = await handle.result().catch(() => null);
    const phase = result?.status ?? (status.name.toLowerCase() as EsignTransactionStatus['phase']);
    return {
      phase,
      summary: `Ended ${phase}${result?.reason ? `: ${result.reason}` : ''} (read from the result: no worker answered)`,
      referenceId,
      transactionId: result?.transactionId ?? null,
      esignId: result?.esignId ?? null,
      participants: [],
      providerStatus: null,
      deadline: null,
      lastReconciledAt: null,
      notificationsAccepted: 0,
      notificationsRejected: 0,
      result,
      fromResult: true,
    };
  }
}

export function getEsignTransaction(client: Client, referenceId: string): WorkflowHandle<EsignTransactionWorkflow> {
  return client.workflow.getHandle<EsignTransactionWorkflow>(workflowIdFor(referenceId));
}

/**
 * A fresh signing URL for the participants named (single-use and short-lived: hand it to the signer now). Waits in
 * the workflow until the provider's transaction exists; fails with `UnknownParticipant`, `TransactionIsDraft` or
 * `TransactionFinished` (`failureTypeOf`).
 */
export async function issueSigningUrl(client: Client, referenceId: string, request: IssueSigningUrlRequest): Promise<IssuedSigningUrl> {
  return getEsignTransaction(client, referenceId).executeUpdate(issueSigningUrlUpdate, { args: [request] });
}

/**
 * Withdraws the transaction at the provider and ends it as `cancelled` (its result). Fails with `WithdrawRefused`
 * when a participant has signed (the transaction goes on and may still complete) and with `TransactionFinished`
 * when it has ended meanwhile (`failureTypeOf`).
 */
export async function cancelEsignTransaction(client: Client, referenceId: string, reason?: string): Promise<EsignTransactionResult> {
  return getEsignTransaction(client, referenceId).executeUpdate(cancelUpdate, { args: [reason ? { reason } : {}] });
}
