import { ApplicationFailure, Context } from '@temporalio/activity';
import { EsignApiError } from '../src/esign/errors.js';

/** Failure types operators see in the Web UI; the non-retryable ones end the workflow's step. */
export const FailureType = {
  InvalidInput: 'InvalidInput',
  InvalidDocument: 'InvalidDocument',
  ProviderRejected: 'ProviderRejected',
  ProviderUnavailable: 'ProviderUnavailable',
  ProviderContract: 'ProviderContractViolation',
  ArchiveInvalid: 'ArchiveInvalid',
  ArchiveIncomplete: 'ArchiveIncomplete',
  UrlNotAllowed: 'UrlNotAllowed',
} as const;

/**
 * Turns a provider error into the failure Temporal acts on: Temporal owns the
 * retries, so a retryable error is rethrown with the provider's Retry-After as
 * the next delay, and a permanent one is marked non-retryable.
 */
export function toFailure(err: unknown): unknown {
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

const HEARTBEAT_EVERY_MS = 2_000;

/**
 * Heartbeats every 2 s while `work` runs. The heartbeat proves the worker
 * process is alive, so a worker that dies mid-activity is noticed within the
 * activity's (short) heartbeat timeout rather than its whole start-to-close
 * timeout; progress details, when given, show in the Web UI and CLI.
 */
export async function heartbeating<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(details?.()), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}

/** Runs a provider call while heartbeating, and converts its failure. */
export async function provider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await heartbeating(call);
  } catch (err) {
    throw toFailure(err);
  }
}
