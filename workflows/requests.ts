/** The transaction workflow's requests to the provider, built from its input (workflow code: deterministic). */
import { ActivityFailure, ApplicationFailure, proxyLocalActivities, uuid4 } from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';
import type { CreateTransactionRequest, Participant, UpdateTransactionRequest } from '../src/esign/schemas.js';
import type { EsignTransactionInput, ValidEsignTransactionInput } from '../src/transaction/input.js';

const checks = proxyLocalActivities<EsignActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

/** The input, validated with the schema's defaults applied and the poll interval floored by the worker. */
export async function validInput(raw: EsignTransactionInput): Promise<ValidEsignTransactionInput> {
  try {
    return await checks.validateTransactionInput(raw);
  } catch (err) {
    // A refused input (or callback URL) fails the workflow with the activity's own type and message.
    if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
      throw ApplicationFailure.nonRetryable(err.cause.message, err.cause.type);
    }
    throw err;
  }
}

export function buildCreateRequest(
  input: ValidEsignTransactionInput,
  participants: Participant[],
  storagePaths: string[],
): CreateTransactionRequest {
  return {
    // Approvers see it before its signers do: a draft until their quorum approves (./transaction/approving.ts).
    status: input.approval ? 'draft' : input.status,
    referenceId: input.referenceId,
    documents: input.documents.map((d, i) => ({
      id: uuid4(),
      title: d.title,
      StoragePath: storagePaths[i]!,
      sessionType: 'esign',
      ...pick(d, ['description', 'order', 'readOnly', 'visible']),
      tags: d.tags.map(({ signerIndex, signerId, ...tag }) => ({ ...tag, signerId: signerId ?? participants[signerIndex!]!.id })),
    })),
    participants,
    ...pick(input, [
      'notifyParticipants',
      'signingOrder',
      'personalizedMessage',
      'emailSubject',
      'evault',
      'sendFinalEnoteTo',
      'taggingOrganizationId',
      'taggingUserId',
    ]),
  };
}

/** The spec's replace (4.4) of a created transaction: its documents and participants, with these changes. */
export function buildUpdateRequest(
  request: CreateTransactionRequest,
  referenceId: string,
  change: Pick<UpdateTransactionRequest, 'status'> & Partial<UpdateTransactionRequest>,
): UpdateTransactionRequest {
  return {
    documents: request.documents,
    participants: request.participants,
    referenceId,
    status: change.status,
    ...pick(request, ['notifyParticipants', 'signingOrder', 'personalizedMessage', 'emailSubject']),
    ...pick(change, ['notifyParticipants', 'signingOrder', 'personalizedMessage', 'emailSubject']),
  };
}

/** The listed keys of `from` that are defined (the provider's schema has no nulls). */
export function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (from[k] !== undefined) out[k] = from[k];
  return out;
}
