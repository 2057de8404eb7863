// A provider's Retry-After becomes the next retry's delay; one of 0 (or an HTTP-date already past) asks for no wait,
// and must leave the activity retried by its policy rather than ended.
import type { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { EsignApiError, parseRetryAfter } from '../../src/esign/errors.js';
import { providerFailure } from '../../src/esign/temporal-failure.js';

const limited = (retryAfterMs: number | undefined) =>
  providerFailure(
    new EsignApiError({ kind: 'http', status: 429, operation: 'createTransaction', message: 'slow down', retryAfterMs }),
  ) as ApplicationFailure;

describe('a 429 with Retry-After', () => {
  it('of some seconds sets the next retry delay', () => {
    const failure = limited(parseRetryAfter('7'));
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(7_000);
  });

  it('of 0, or a date already past, is retried by the policy (no delay of 0)', () => {
    for (const header of ['0', new Date(Date.now() - 60_000).toUTCString()]) {
      const failure = limited(parseRetryAfter(header));
      expect(failure.nonRetryable).toBe(false);
      expect(failure.nextRetryDelay).toBeUndefined();
    }
  });
});
