import { ApplicationFailure } from '@temporalio/activity';
import { isRefusedPlaintext, PLAINTEXT_REFUSED_MESSAGE } from '../src/codec/plaintext.js';
import { FailureType } from '../src/failures.js';
import { EsignTransactionInput, type ValidEsignTransactionInput } from '../src/transaction/input.js';
import { durationToMs } from '../src/util/duration.js';
import { describeIssues } from '../src/util/zod-issues.js';
import type { UrlPolicy } from './support/url-policy.js';

export interface InputValidationDeps {
  /** The worker's outbound allow-list: a callback it would refuse fails the transaction before anything is uploaded. */
  urlPolicy: UrlPolicy;
  /** The shortest reconciliation interval this worker allows; shorter requests are raised to it. */
  minReconcileMs: number;
  /** Whether the worker has secrets to sign callbacks with (ESIGN_CALLBACK_SECRETS). */
  canSignCallbacks: boolean;
  /**
   * The worker archives only what it verifies (evidence policy `require`): a document the caller uploaded itself
   * must come with its hash, or nothing could show the provider signed exactly that upload.
   */
  requireUploadHashes: boolean;
}

/**
 * Validation of the workflow's input, run as a local activity: zod lives in
 * the worker's main context once, not in every cached workflow's workflow sandbox
 * (workflows/README.md says why). The result, defaults applied, is recorded
 * in history, so replays do not validate again.
 */
export function createInputValidationActivities(deps: InputValidationDeps) {
  return {
    async validateTransactionInput(raw: unknown): Promise<ValidEsignTransactionInput> {
      if (isRefusedPlaintext(raw))
        throw ApplicationFailure.nonRetryable(`invalid input: ${PLAINTEXT_REFUSED_MESSAGE}`, FailureType.InvalidInput);
      const parsed = EsignTransactionInput.safeParse(raw);
      if (!parsed.success) {
        throw ApplicationFailure.nonRetryable(`invalid input: ${describeIssues(parsed.error)}`, FailureType.InvalidInput);
      }
      if (parsed.data.callbackUrl) {
        deps.urlPolicy.check(parsed.data.callbackUrl, 'callbackUrl');
        if (!deps.canSignCallbacks) {
          throw ApplicationFailure.nonRetryable(
            'invalid input: callbackUrl: this worker has no ESIGN_CALLBACK_SECRETS to sign events with; configure them or leave callbackUrl out',
            FailureType.InvalidInput,
          );
        }
      }
      if (deps.requireUploadHashes) {
        const unhashed = parsed.data.documents.findIndex((d) => 'storagePath' in d.source && !d.source.sha256);
        if (unhashed !== -1) {
          throw ApplicationFailure.nonRetryable(
            `invalid input: documents.${unhashed}.source: give sha256 with storagePath (the SHA-256 of the PDF you uploaded); ` +
              'this worker archives only documents it can show the provider signed as uploaded',
            FailureType.InvalidInput,
          );
        }
      }
      // The floor keeps a busy provider from being polled to death and a year-long transaction's history bounded.
      if (durationToMs(parsed.data.reconcileInterval) < deps.minReconcileMs)
        return { ...parsed.data, reconcileInterval: deps.minReconcileMs };
      return parsed.data;
    },
  };
}
