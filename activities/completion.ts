import { ApplicationFailure, log } from '@temporalio/activity';
import { request } from 'undici';
import { FailureType, isRetryableStatus } from '../src/failures.js';
import { eventId, type CallbackSigner } from './support/callback-signer.js';
import type { UrlPolicy } from './support/url-policy.js';
import type { EsignTransactionResult, IntegratorEvent, IntegratorEventBody } from '../src/definitions/transaction.js';

export interface CompletionDeps {
  urlPolicy: UrlPolicy;
  /** Signs events to callback URLs; without it, a transaction with a callbackUrl is refused at validation. */
  callbackSigner?: CallbackSigner;
}

export function createCompletionActivities(deps: CompletionDeps) {
  /**
   * POSTs one event to the integrator's callback URL, signed per Standard
   * Webhooks with a stable `webhook-id`. 2xx delivers; 408, 429, 5xx and
   * network errors are retried by Temporal; any other answer is final.
   */
  async function deliver(callbackUrl: string, event: IntegratorEvent): Promise<void> {
    const url = deps.urlPolicy.check(callbackUrl, 'callbackUrl');
    if (!deps.callbackSigner)
      throw ApplicationFailure.nonRetryable('no ESIGN_CALLBACK_SECRETS to sign callbacks with', FailureType.CallbackRejected);
    const body = JSON.stringify({ type: event.type, timestamp: event.occurredAt, data: event.data } satisfies IntegratorEventBody);
    let status: number;
    try {
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...deps.callbackSigner.headers(eventId(event.key), body) },
        body,
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
      });
      await res.body.dump();
      status = res.statusCode;
    } catch (err) {
      throw ApplicationFailure.retryable(`callback ${url.origin} unreachable: ${(err as Error).message}`, FailureType.CallbackFailed);
    }
    if (status >= 200 && status < 300) return;
    const message = `callback ${url.origin} answered HTTP ${status} to ${event.type}`;
    if (isRetryableStatus(status)) throw ApplicationFailure.retryable(message, FailureType.CallbackFailed);
    throw ApplicationFailure.nonRetryable(message, FailureType.CallbackRejected);
  }

  return {
    /** Records the outcome in the worker's log and, if asked, sends it to the callback URL as `transaction.<outcome>`. */
    async recordCompletion(input: { result: EsignTransactionResult; callbackUrl?: string; late?: boolean }): Promise<void> {
      const { result } = input;
      log.info('esign transaction finished', {
        referenceId: result.referenceId,
        status: result.status,
        transactionId: result.transactionId,
        archive: result.archive?.uri,
        late: input.late === true,
      });
      if (!input.callbackUrl) return;
      const type = input.late ? 'transaction.completed_late' : (`transaction.${result.status}` as const);
      await deliver(input.callbackUrl, {
        type,
        key: `${result.transactionId ?? result.referenceId}:${type}`,
        occurredAt: new Date().toISOString(),
        data: { ...result },
      });
    },

    /** Sends one progress event (a participant signed, a reminder is due) to the callback URL. */
    async notifyIntegrator(input: { callbackUrl: string; event: IntegratorEvent }): Promise<void> {
      await deliver(input.callbackUrl, input.event);
    },
  };
}
