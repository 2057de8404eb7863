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
      // A Retry-After of 0 (or a date already past) asks for no wait: the retry policy's own backoff applies, as
      // without one. Given as a delay of 0, Temporal ended the activity unretried instead.
      ...(err.retryAfterMs !== undefined && err.retryAfterMs > 0 ? { nextRetryDelay: err.retryAfterMs } : {}),
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
