import {
  WithStartWorkflowOperation,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { assertWorkersDecrypt } from './codec-check.js';
import { failureTypeOf } from './failures.js';
import { describeIfExists } from './describe.js';
import { stuckRunFailure } from './stuck.js';
import type { Priority } from '@temporalio/common';
import { describeIssues } from '../util/zod-issues.js';
import {
  approveUpdate,
  cancelUpdate,
  correctTransactionUpdate,
  DEFAULT_TASK_QUEUE,
  issueSigningUrlUpdate,
  rejectUpdate,
  retryArchiveUpdate,
  statusQuery,
  WORKFLOW_TYPE,
  type EsignRunFailure,
  type EsignTransactionResult,
  type EsignTransactionStatus,
  type EsignTransactionWorkflow,
  workflowIdFor,
  type IssuedSigningUrl,
  type IssueSigningUrlRequest,
} from '../definitions/transaction.js';
import {
  LATE_COMPLETION_WORKFLOW_TYPE,
  lateCompletionIdFor,
  lateRetryArchiveUpdate,
  type EsignLateCompletionWorkflow,
} from '../definitions/late-completion.js';
import { EsignTransactionInput } from '../transaction/input.js';
import { asCorrection, TransactionCorrection as TransactionCorrectionSchema } from '../transaction/corrections.js';
import { ApprovalRequest as ApprovalRequestSchema, RejectionRequest as RejectionRequestSchema } from '../transaction/approvals.js';
import type { ApprovalAnswer, ApprovalRequest, RejectionRequest } from '../definitions/approvals.js';
import type { CorrectionResult, TransactionCorrection } from '../definitions/corrections.js';
import { EsignBatchId, EsignId, EsignReferenceId, EsignStatus, EsignTransactionId } from '../definitions/search-attributes.js';

export class InvalidTransactionInput extends Error {
  override readonly name = 'InvalidTransactionInput';
}

export class InvalidCorrection extends Error {
  override readonly name = 'InvalidCorrection';
}

/** An approval or rejection the client refuses before sending it: what is wrong with it. */
export class InvalidApproval extends Error {
  override readonly name = 'InvalidApproval';
}

/** More than one late completion of a referenceId waits for a retry of its archive: name one by its transactionId. */
export class AmbiguousArchiveRetry extends Error {
  override readonly name = 'AmbiguousArchiveRetry';
}

/**
 * The id names a late completion that has ended (archived, or terminated by an operator, docs/operations.md): nothing
 * of that id waits for a retry. A `WorkflowNotFoundError` (the documented answer when nothing waits) that names the
 * late completion and how it ended, where the transaction workflow of that id, which never existed, said only "not found".
 */
export class LateCompletionEnded extends WorkflowNotFoundError {
  override readonly name = 'LateCompletionEnded';
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
  // Nothing to sign until it is sent: refused here, before a workflow starts that the caller holds no handle to.
  if (options.signingUrlFor && parsed.data.approval)
    throw new InvalidTransactionInput(
      'invalid transaction input: signingUrlFor cannot come with approval: signing URLs are issued once its approvers approve it',
    );
  if (options.signingUrlFor && parsed.data.status === 'draft')
    throw new InvalidTransactionInput('invalid transaction input: signingUrlFor cannot come with status draft: a draft is not signed');
  const workflowId = workflowIdFor(parsed.data.referenceId);
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  await assertWorkersDecrypt(client, taskQueue);
  const startOptions = {
    taskQueue,
    workflowId,
    args: [input] as [EsignTransactionInput],
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    ...(options.onlyOnce ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const } : {}),
    // No memo: a title names people, and a memo under an erased data key would break every listing that holds it
    // (clients decode memos as they list). Operators find a transaction by its search attributes (ids only).
    typedSearchAttributes: [
      { key: EsignReferenceId, value: parsed.data.referenceId },
      { key: EsignStatus, value: 'uploading' },
      ...(options.batchId ? [{ key: EsignBatchId, value: options.batchId }] : []),
    ],
    ...(options.priority ? { priority: options.priority } : {}),
  };
  if (options.signingUrlFor) {
    const operation = new WithStartWorkflowOperation<EsignTransactionWorkflow>(WORKFLOW_TYPE, startOptions);
    const { url, transactionId } = await orWorkflowFailure(client, workflowId, () =>
      client.workflow.executeUpdateWithStart(issueSigningUrlUpdate, { args: [options.signingUrlFor!], startWorkflowOperation: operation }),
    );
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
  const described = await handle.describe();
  const { status } = described;
  if (status.name === 'RUNNING') {
    // A run whose task fails on every attempt answers no query (the same code would answer it): told apart first.
    const stuck = await stuckRunFailure(client, described);
    if (stuck) return stuckStatus(referenceId, described, stuck);
    try {
      return { ...(await handle.query(statusQuery)), referenceId };
    } catch (err) {
      // Asked during its first attempt, the query waited on a task that then failed: stuck since, or failing otherwise.
      const again = await handle.describe().catch(() => undefined);
      const since = again?.status.name === 'RUNNING' ? await stuckRunFailure(client, again).catch(() => undefined) : undefined;
      if (again && since) return stuckStatus(referenceId, again, since);
      throw err;
    }
  }
  const queried = await client.withDeadline(Date.now() + endedQueryMs, () => handle.query(statusQuery)).catch(() => undefined);
  if (status.name !== 'COMPLETED') {
    // Ended without a result: what the run's state said is not where it stands (it will not move again).
    const failure = await runFailure(handle, status.name);
    return {
      ...(queried ?? unknownStatus(referenceId)),
      referenceId,
      phase: 'failed',
      summary: `Ended without a result (${failure.closedAs}${failure.type ? `, ${failure.type}` : ''}): ${failure.message}`,
      result: null,
      failure,
    };
  }
  if (queried) return { ...queried, referenceId };
  const result = await handle.result();
  return {
    ...unknownStatus(referenceId),
    phase: result.status,
    summary: `Ended ${result.status}${result.reason ? `: ${result.reason}` : ''} (read from the result: no worker answered)`,
    transactionId: result.transactionId,
    esignId: result.esignId,
    result,
    fromResult: true,
  };
}

/**
 * A stuck run's status: what the server keeps of it without a worker, its search attributes (the phase it last
 * reached, the provider's ids), and why its task fails. Participants and counts are unknown (no query is answered).
 */
function stuckStatus(referenceId: string, described: WorkflowExecutionDescription, failure: EsignRunFailure): EsignTransactionStatus {
  const attributes = described.typedSearchAttributes;
  const lastPhase = attributes.get(EsignStatus);
  return {
    phase: 'stuck',
    summary:
      `Stuck${lastPhase ? ` in ${lastPhase}` : ''}: its workflow task fails on every attempt (attempt ${failure.attempts}` +
      `${failure.since ? `, since ${failure.since}` : ''}${failure.type ? `, ${failure.type}` : ''}): ${failure.message}`,
    referenceId,
    transactionId: attributes.get(EsignTransactionId) ?? null,
    esignId: attributes.get(EsignId) ?? null,
    participants: [],
    providerStatus: null,
    deadline: null,
    lastReconciledAt: null,
    notificationsAccepted: 0,
    notificationsRejected: 0,
    result: null,
    failure,
  };
}

/** What is known of a transaction whose run no worker describes: its reference only. */
function unknownStatus(referenceId: string): EsignTransactionStatus {
  return {
    phase: 'failed',
    summary: '',
    referenceId,
    transactionId: null,
    esignId: null,
    participants: [],
    providerStatus: null,
    deadline: null,
    lastReconciledAt: null,
    notificationsAccepted: 0,
    notificationsRejected: 0,
    result: null,
    fromResult: true,
  };
}

/** How a closed run without a result ended: its failure's type (catalogued, when it has one) and message. */
async function runFailure(handle: WorkflowHandle, closed: string): Promise<EsignRunFailure> {
  const closedAs = ({ TERMINATED: 'terminated', TIMED_OUT: 'timed_out', CANCELLED: 'cancelled' } as const)[closed] ?? 'failed';
  try {
    await handle.result();
    return { closedAs, type: null, message: `the workflow is ${closed.toLowerCase()}` };
  } catch (err) {
    const cause = err instanceof WorkflowFailedError && err.cause ? err.cause : (err as Error);
    return { closedAs, type: failureTypeOf(err) ?? null, message: cause.message };
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
  const handle = getEsignTransaction(client, referenceId);
  return orWorkflowFailure(client, handle.workflowId, () => handle.executeUpdate(issueSigningUrlUpdate, { args: [request] }));
}

/**
 * Corrects the transaction in flight (docs/workflow.md, "Corrections"): checked here first (`InvalidCorrection` says what is
 * wrong), then by the workflow, whose validator refuses with the reason; fails with `CorrectionRefused`,
 * `ProviderRejected` or `TransactionFinished` (`failureTypeOf`) when its turn came too late or the provider refused
 * it, the transaction unchanged. A change of person or address answers with the participant's new id (`added`).
 */
export async function correctEsignTransaction(
  client: Client,
  referenceId: string,
  correction: TransactionCorrection,
): Promise<CorrectionResult> {
  const parsed = TransactionCorrectionSchema.safeParse(correction);
  if (!parsed.success) throw new InvalidCorrection(`invalid correction: ${describeIssues(parsed.error)}`);
  const handle = getEsignTransaction(client, referenceId);
  return orWorkflowFailure(client, handle.workflowId, () =>
    handle.executeUpdate(correctTransactionUpdate, { args: [asCorrection(parsed.data)] }),
  );
}

/**
 * An approver approves the transaction (docs/workflow.md, "Approvals"); the approval that meets the quorum sends it
 * (`outcome: 'sending'`). Checked here first (`InvalidApproval`), then by the workflow, whose validator refuses with the
 * reason: not one of its approvers, an approver who already answered, a transaction not awaiting approval (sent,
 * ended, being cancelled) or past its approval deadline.
 */
export async function approveEsignTransaction(client: Client, referenceId: string, approval: ApprovalRequest): Promise<ApprovalAnswer> {
  const parsed = ApprovalRequestSchema.safeParse(approval);
  if (!parsed.success) throw new InvalidApproval(`invalid approval: ${describeIssues(parsed.error)}`);
  const handle = getEsignTransaction(client, referenceId);
  return orWorkflowFailure(client, handle.workflowId, () => handle.executeUpdate(approveUpdate, { args: [parsed.data] }));
}

/** An approver rejects the transaction before it is sent, with the reason: it ends `rejected`. Refused as an approval is. */
export async function rejectEsignTransaction(client: Client, referenceId: string, rejection: RejectionRequest): Promise<ApprovalAnswer> {
  const parsed = RejectionRequestSchema.safeParse(rejection);
  if (!parsed.success) throw new InvalidApproval(`invalid rejection: ${describeIssues(parsed.error)}`);
  const handle = getEsignTransaction(client, referenceId);
  return orWorkflowFailure(client, handle.workflowId, () => handle.executeUpdate(rejectUpdate, { args: [parsed.data] }));
}

/**
 * Withdraws the transaction at the provider and ends it as `cancelled` (its result). Fails with `WithdrawRefused`
 * when a participant has signed (the transaction goes on and may still complete) and with `TransactionFinished`
 * when it has ended meanwhile (`failureTypeOf`).
 */
export async function cancelEsignTransaction(client: Client, referenceId: string, reason?: string): Promise<EsignTransactionResult> {
  const handle = getEsignTransaction(client, referenceId);
  return orWorkflowFailure(client, handle.workflowId, () => handle.executeUpdate(cancelUpdate, { args: [reason ? { reason } : {}] }));
}

/**
 * Sends an update; when its workflow closed under it (or before it) because the workflow failed, fails with the
 * workflow's own failure instead, whose type says why (`failureTypeOf`: `UrlNotAllowed`, `InvalidInput`, …), where
 * the update's error says only that the workflow closed.
 */
async function orWorkflowFailure<T>(client: Client, workflowId: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (err) {
    const closedUnder =
      err instanceof WorkflowNotFoundError ||
      (err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === 'AcceptedUpdateCompletedWorkflow');
    if (!closedUnder) throw err;
    const described = await describeIfExists(client, workflowId).catch(() => undefined);
    if (!described || described.status.name === 'RUNNING' || described.status.name === 'COMPLETED') throw err;
    const failure = await client.workflow
      .getHandle(workflowId, described.runId)
      .result()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    throw failure instanceof WorkflowFailedError ? failure : err;
  }
}

/**
 * Archives again a completed transaction whose ZIP was refused (`archive_invalid`), once its cause is fixed. `id` is
 * the transaction's referenceId, or the provider's transactionId of a late completion (a completion after its
 * workflow ended, docs/webhooks.md point 5) waiting in `archive_invalid`; by the referenceId, such a late completion
 * is found (in visibility) when the transaction workflow of that referenceId is not itself the one waiting. Returns
 * the archived result; fails with the reason when refused again or when nothing of that id waits (the transaction
 * workflow's validator says why, or `WorkflowNotFoundError`: `LateCompletionEnded` when the id names a late completion
 * that has ended, archived or terminated), and with `AmbiguousArchiveRetry` when several late completions of the
 * referenceId wait.
 */
export async function retryEsignArchive(client: Client, id: string): Promise<EsignTransactionResult> {
  const late = await lateCompletionWaitingFor(client, id);
  if (late) return late.executeUpdate(lateRetryArchiveUpdate);
  const handle = getEsignTransaction(client, id);
  try {
    return await orWorkflowFailure(client, handle.workflowId, () => handle.executeUpdate(retryArchiveUpdate));
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    throw (await lateCompletionEnded(client, id)) ?? err;
  }
}

/**
 * When `id` is the transactionId of a late completion that has ended: no transaction workflow of that id answered, so
 * the error would name `esign-<id>`, a workflow that never existed, while the operator's id was right and only late.
 */
async function lateCompletionEnded(client: Client, id: string): Promise<LateCompletionEnded | undefined> {
  const described = await describeIfExists(client, lateCompletionIdFor(id)).catch(() => undefined);
  if (described?.type !== LATE_COMPLETION_WORKFLOW_TYPE || described.status.name === 'RUNNING') return undefined;
  const how = described.status.name.toLowerCase().replace('_', ' ');
  return new LateCompletionEnded(
    `the late completion of transaction ${id} (${described.workflowId}) has ended ${how}: nothing of that id waits for a retry of its archive`,
    described.workflowId,
    described.runId,
  );
}

async function lateCompletionWaitingFor(client: Client, id: string): Promise<WorkflowHandle<EsignLateCompletionWorkflow> | undefined> {
  const running = async (workflowId: string) => {
    const described = await describeIfExists(client, workflowId);
    return described?.status.name === 'RUNNING' ? described : undefined;
  };
  // A transactionId names its late completion.
  const byTransaction = await running(lateCompletionIdFor(id));
  if (byTransaction?.type === LATE_COMPLETION_WORKFLOW_TYPE) return client.workflow.getHandle(byTransaction.workflowId);
  // A referenceId: its transaction workflow when that is the one waiting; else a late completion of it that waits.
  const transaction = await running(workflowIdFor(id));
  if (transaction?.typedSearchAttributes.get(EsignStatus) === 'archive_invalid') return undefined;
  // The id goes into the query as a string literal: one that could close the literal is not looked up.
  if (/['"\\]/.test(id)) return undefined;
  const query =
    `WorkflowType = '${LATE_COMPLETION_WORKFLOW_TYPE}' AND ${EsignReferenceId.name} = '${id}' AND ` +
    `${EsignStatus.name} = 'archive_invalid' AND ExecutionStatus = 'Running'`;
  const waiting: string[] = [];
  try {
    for await (const wf of client.workflow.list({ query })) waiting.push(wf.workflowId);
  } catch {
    // A server whose visibility cannot be searched so: the referenceId names the transaction workflow only.
    return undefined;
  }
  if (waiting.length > 1) {
    const ids = waiting.map((w) => w.slice(lateCompletionIdFor('').length)).join(', ');
    throw new AmbiguousArchiveRetry(
      `${waiting.length} late completions of referenceId "${id}" wait in archive_invalid: retry each by its transactionId (${ids})`,
    );
  }
  return waiting[0] === undefined ? undefined : client.workflow.getHandle(waiting[0]);
}
