import { ApplicationFailure, log } from '@temporalio/activity';
import { request } from 'undici';
import { FailureType, isRetryableStatus } from '../src/failures.js';
import type { EsignTransactionResult } from '../workflows/definitions.js';
import type { UrlPolicy } from '../src/worker/url-policy.js';

export interface CompletionDeps {
  urlPolicy: UrlPolicy;
}

export function createCompletionActivities(deps: CompletionDeps) {
  return {
    /** Records the outcome in the worker's log and, if asked, POSTs it to the caller's callback URL. */
    async recordCompletion(input: { result: EsignTransactionResult; callbackUrl?: string }): Promise<void> {
      log.info('esign transaction finished', {
        referenceId: input.result.referenceId,
        status: input.result.status,
        transactionId: input.result.transactionId,
        archive: input.result.archive?.uri,
      });
      if (!input.callbackUrl) return;
      const url = deps.urlPolicy.check(input.callbackUrl, 'callbackUrl');
      let status: number;
      try {
        const res = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': `${input.result.referenceId}:${input.result.status}` },
          body: JSON.stringify(input.result),
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
        });
        await res.body.dump();
        status = res.statusCode;
      } catch (err) {
        throw ApplicationFailure.retryable(`callback ${url.origin} unreachable: ${(err as Error).message}`, FailureType.CallbackFailed);
      }
      if (status >= 200 && status < 300) return;
      const message = `callback ${url.origin} answered HTTP ${status}`;
      if (isRetryableStatus(status)) throw ApplicationFailure.retryable(message, FailureType.CallbackFailed);
      throw ApplicationFailure.nonRetryable(message, FailureType.CallbackRejected);
    },
  };
}
