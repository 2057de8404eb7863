import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../failures.js';
import { EsignApiError } from './errors.js';

/**
 * Turns a provider error into the failure Temporal acts on: Temporal owns the
 * retries, so a retryable error is rethrown with the provider's Retry-After as
 * the next delay, and a permanent one is marked non-retryable. Anything else
 * is returned as it is.
 */
export function providerFailure(err: unknown): unknown {
  if (!(err instanceof EsignApiError)) return err;
  if (err.retryable) {
    return ApplicationFailure.create({
      message: err.message,
      type: FailureType.ProviderUnavailable,
      nonRetryable: false,
      ...(err.retryAfterMs !== undefined ? { nextRetryDelay: err.retryAfterMs } : {}),
      details: [{ status: err.status ?? null, kind: err.kind }],
    });
  }
  return ApplicationFailure.create({
    message: err.message,
    type: err.kind === 'invalid_response' ? FailureType.ProviderContract : FailureType.ProviderRejected,
    nonRetryable: true,
    details: [{ status: err.status ?? null, kind: err.kind, errors: err.problem?.errors ?? [] }],
  });
}
