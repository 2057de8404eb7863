/**
 * The transaction workflow's messages: each handler is one line that
 * delegates to the state machine or to `Requests` below, and each update a
 * state refuses is refused by its validator, with the reason. Rules
 * (workflows/README.md): no handler waits on the main loop without a way out
 * (every wait here also ends when the transaction is finishing or has a
 * result), and none holds up a continue-as-new except while it finishes on its own.
 */
import { ApplicationFailure, condition, isCancellation, setHandler } from '@temporalio/workflow';
import { isRefusedPlaintext, PLAINTEXT_REFUSED_MESSAGE } from '../../src/codec/plaintext.js';
import { FailureType } from '../../src/failures.js';
import {
  approveUpdate,
  cancelUpdate,
  correctTransactionUpdate,
  esignCompletedSignal,
  esignEventSignal,
  issueSigningUrlUpdate,
  rejectUpdate,
  replaceTransactionUpdate,
  retryArchiveUpdate,
  statusQuery,
  type EsignTransactionResult,
  type IssuedSigningUrl,
  type IssueSigningUrlRequest,
  type ReplaceTransactionRequest,
} from '../../src/definitions/transaction.js';
import { readCompletedNotification, readNotification } from '../notification.js';
import { buildUpdateRequest } from '../requests.js';
import { awaitingApproval, awaitsApprovers, refuseApproval } from './approval-rules.js';
import type { Approvals } from './approving.js';
import type { Corrections } from './correcting.js';
import { refuseCorrection } from './corrections.js';
import type { SigningTransaction } from './machine.js';
import { statusOf } from './view.js';
import { keepLandsUntil, landsUntilOf, providerFailure, type Steps } from './steps.js';

const finished = (what: string) => ApplicationFailure.nonRetryable(what, FailureType.TransactionFinished);

/** Refuses an update in a validator: plaintext payloads first, then the state machine's reason, if any. */
function refuse(request: unknown, why: (request: never) => string | undefined): void {
  if (isRefusedPlaintext(request)) throw new Error(PLAINTEXT_REFUSED_MESSAGE);
  const reason = why(request as never);
  if (reason !== undefined) throw new Error(reason);
}

// ------------------------------------------------ validators' reasons
export function refuseSigningUrl(tx: SigningTransaction, participantIds: unknown): string | undefined {
  if (tx.isFinishing()) return `transaction is ${tx.cancel ? 'being cancelled' : tx.phase}`;
  if (tx.phase === 'draft') return 'transaction is a draft: send it first (replaceTransaction with status esign_pending)';
  if (awaitsApprovers(tx)) return 'transaction awaits approval: signing URLs are issued once it is sent';
  if (!Array.isArray(participantIds) || participantIds.length === 0) return 'participantIds must not be empty';
  const unknown = tx.input ? tx.unknownParticipants(participantIds as string[]) : [];
  if (unknown.length > 0) return `unknown participant(s): ${unknown.join(', ')}`;
  return undefined;
}

export function refuseReplace(
  tx: SigningTransaction,
  change: { status?: unknown; emailSubject?: unknown } | undefined,
): string | undefined {
  if (tx.isFinishing()) return `transaction is ${tx.phase}; it can no longer be replaced`;
  if (tx.phase === 'overdue') return 'transaction is overdue: its deadline passed';
  if (tx.withdrawing) return 'transaction is being withdrawn (its deadline passed)';
  if (tx.phase === 'awaiting_approval' || awaitsApprovers(tx))
    return 'transaction awaits approval: it is sent once its approvers approve it';
  if (change?.status !== 'draft' && change?.status !== 'esign_pending') return 'status must be draft or esign_pending';
  if (typeof change.emailSubject === 'string' && change.emailSubject.length > 255) return 'emailSubject must be at most 255 characters';
  return undefined;
}

export function refuseCancel(tx: SigningTransaction): string | undefined {
  if (tx.finished || tx.phase === 'archiving' || tx.phase === 'archive_invalid')
    return `transaction is ${tx.phase}; it can no longer be cancelled`;
  return undefined;
}

export function refuseRetryArchive(tx: SigningTransaction): string | undefined {
  if (tx.phase !== 'archive_invalid') return `transaction is ${tx.phase}: only a refused archive (archive_invalid) can be retried`;
  return undefined;
}

/** The updates' work: what each asks of the provider, and what it waits for. */
export class Requests {
  constructor(
    private readonly tx: SigningTransaction,
    private readonly steps: Steps,
  ) {}

  async signingUrl({ participantIds, style }: IssueSigningUrlRequest): Promise<IssuedSigningUrl> {
    const { tx } = this;
    tx.activity++;
    // Waits until the transaction is registered and its phase known (a draft gets no URL), and sent once approved.
    await condition(() => (tx.open && tx.phase !== 'awaiting_approval') || tx.isFinishing() || awaitsApprovers(tx));
    if (!tx.created || tx.isFinishing()) throw finished(`transaction is ${tx.phase}`);
    if (tx.phase === 'draft')
      throw ApplicationFailure.nonRetryable('transaction is a draft: send it first', FailureType.TransactionIsDraft);
    // Still unsent: the condition may have held while the quorum was unmet and an approval met it since (the approve
    // recorded in the same activation): the loop has not sent it yet, so it is refused as before the approval.
    if (tx.phase === 'awaiting_approval' || awaitsApprovers(tx)) throw awaitingApproval();
    // Checked here too: an update that came with the start was validated before the participants were known.
    const unknown = tx.unknownParticipants(participantIds);
    if (unknown.length > 0)
      throw ApplicationFailure.nonRetryable(`unknown participant(s): ${unknown.join(', ')}`, FailureType.UnknownParticipant);
    const iframeStyle = style ?? tx.input!.iframeStyle;
    const { esignId, transactionId } = tx.created;
    try {
      // A few attempts, then the caller hears why: the caller may ask again; the loop is never held meanwhile.
      const { url } = await this.steps.attempt(`Issue a signing URL for ${participantIds.length} participant(s)`, (a) =>
        a.createSigningUrl({ esignId, participantIds, ...(iframeStyle ? { style: iframeStyle } : {}) }),
      );
      // With the provider's id, a caller that started with this update needs no query to learn it.
      return { url, transactionId };
    } catch (err) {
      if (isCancellation(err)) throw err;
      throw providerFailure(err, 'the provider did not issue a signing URL');
    }
  }

  async replace(change: ReplaceTransactionRequest): Promise<{ status: string }> {
    const { tx } = this;
    tx.activity++;
    await condition(() => tx.open || tx.isFinishing());
    if (!tx.created || tx.isFinishing() || tx.withdrawing) throw finished(`transaction is ${tx.phase}; it can no longer be replaced`);
    return this.steps.write(`Replace the transaction (status ${change.status})`, async (a) => {
      // Queued behind a withdraw that won: the transaction is ending, so it must not be sent again.
      if (tx.isFinishing() || tx.withdrawing || tx.phase === 'overdue')
        throw finished(`transaction is ${tx.cancel ? 'being cancelled' : tx.phase}; it can no longer be replaced`);
      // Accepted before the input was known to name approvers: nothing is sent before they approve.
      if (tx.phase === 'awaiting_approval' || awaitsApprovers(tx)) throw awaitingApproval();
      const next = buildUpdateRequest(tx.request!, tx.input!.referenceId, change);
      const ref = await a.updateTransaction({ transactionId: tx.created!.transactionId, request: next }).catch((err: unknown) => {
        // A retry refused (a 4xx): the attempt given up on before it may still land, as after a retry that succeeded.
        keepLandsUntil(tx, landsUntilOf(err));
        throw err;
      });
      tx.request = { ...tx.request!, ...next };
      tx.providerStatus = ref.status;
      keepLandsUntil(tx, ref.landsUntil);
      if (!tx.isFinishing()) tx.moveTo(change.status === 'draft' ? 'draft' : 'awaiting_signatures');
      return { status: ref.status };
    });
  }

  async cancel({ reason }: { reason?: string }): Promise<EsignTransactionResult> {
    const attempt = this.tx.requestCancel(reason);
    // The main loop always takes a cancel up, before it waits or hands over to a new run.
    await condition(() => this.tx.result !== null || attempt.refused !== undefined);
    if (this.tx.result) return this.tx.result;
    throw ApplicationFailure.nonRetryable(attempt.refused!.message, attempt.refused!.type);
  }

  async retryArchive(): Promise<EsignTransactionResult> {
    const { tx } = this;
    const refusals = tx.archiveRefusals;
    tx.activity++;
    tx.archiveRetriesAsked++;
    await condition(() => tx.result !== null || tx.archiveRefusals > refusals);
    if (tx.result) return tx.result;
    throw ApplicationFailure.nonRetryable(`the ZIP was refused again: ${tx.archiveProblem ?? ''}`, FailureType.ArchiveInvalid);
  }
}

export function registerHandlers(
  tx: SigningTransaction,
  requests: Requests,
  corrections: Corrections,
  approvals: Approvals,
  now: () => number,
  rawReferenceId: () => unknown,
): void {
  setHandler(statusQuery, () => statusOf(tx, rawReferenceId(), approvals.status()));
  setHandler(esignCompletedSignal, (payload) => tx.receive(readCompletedNotification(payload)));
  setHandler(esignEventSignal, (payload) => tx.receive(readNotification(payload)));
  setHandler(issueSigningUrlUpdate, (request) => requests.signingUrl(request), {
    validator: (request) => refuse(request, (r: Partial<IssueSigningUrlRequest> | null) => refuseSigningUrl(tx, r?.participantIds)),
  });
  setHandler(replaceTransactionUpdate, (change) => requests.replace(change), {
    validator: (change) => refuse(change, (c: ReplaceTransactionRequest | undefined) => refuseReplace(tx, c)),
  });
  setHandler(correctTransactionUpdate, (correction) => corrections.correct(correction), {
    validator: (correction) => refuse(correction, (c: unknown) => refuseCorrection(tx, c, now())),
  });
  setHandler(approveUpdate, (request) => approvals.answer(request, 'approved'), {
    validator: (request) => refuse(request, (r: unknown) => refuseApproval(tx, r, 'approved', now())),
  });
  setHandler(rejectUpdate, (request) => approvals.answer(request, 'rejected'), {
    validator: (request) => refuse(request, (r: unknown) => refuseApproval(tx, r, 'rejected', now())),
  });
  setHandler(cancelUpdate, (request) => requests.cancel(request), { validator: (request) => refuse(request, () => refuseCancel(tx)) });
  setHandler(retryArchiveUpdate, () => requests.retryArchive(), { validator: () => refuse(undefined, () => refuseRetryArchive(tx)) });
}
