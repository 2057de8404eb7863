import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { request } from 'undici';
import { FailureType, isRetryableStatus } from '../src/failures.js';
import { policyRefusal } from '../src/http/outbound.js';
import { eventId, type CallbackSigner } from './support/callback-signer.js';
import type { UrlPolicy } from './support/url-policy.js';
import type { EsignTransactionResult, IntegratorEvent, IntegratorEventBody } from '../src/definitions/transaction.js';
import { eventLogState } from '../src/client/event-log.js';
import {
  EVENT_LOG_WORKFLOW_TYPE,
  eventLogAppendSignal,
  eventLogIdFor,
  type DeliveryAttempt,
  type EventLogInput,
} from '../src/definitions/event-log.js';

/** How hard one event is tried before it is marked failed in the log: attempts, and the backoff between them. */
export interface CallbackDelivery {
  attempts: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

/** 20 attempts, 1 s doubling to 5 minutes: about an hour and a half. */
export const DEFAULT_CALLBACK_DELIVERY: CallbackDelivery = { attempts: 20, firstDelayMs: 1_000, maxDelayMs: 300_000 };

export interface CompletionDeps {
  urlPolicy: UrlPolicy;
  /** Signs events to callback URLs; without it, a transaction with a callbackUrl is refused at validation. */
  callbackSigner?: CallbackSigner;
  callbackDelivery?: CallbackDelivery;
}

export function createCompletionActivities(deps: CompletionDeps) {
  const budget = deps.callbackDelivery ?? DEFAULT_CALLBACK_DELIVERY;

  /** One POST of one event: what the endpoint answered, and whether to try again. */
  async function attempt(url: URL, event: IntegratorEvent & { sequence: number }): Promise<DeliveryAttempt & { retry: boolean }> {
    const body = JSON.stringify({
      type: event.type,
      sequence: event.sequence,
      timestamp: event.occurredAt,
      data: event.data,
    } satisfies IntegratorEventBody);
    const started = Date.now();
    const at = new Date(started).toISOString();
    try {
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...deps.callbackSigner!.headers(eventId(event.key), body) },
        body,
        // Within the activity's 30 s: a slow endpoint is an attempt that failed, not a worker that died.
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
        signal: callbackDeadline(15_000),
      });
      // The status is the answer; what follows it is read only for a moment.
      await res.body.dump({ limit: 128 * 1024, signal: callbackDeadline(5_000) }).catch(() => undefined);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { at, ms: Date.now() - started, status: res.statusCode, retry: !ok && isRetryableStatus(res.statusCode) };
    } catch (err) {
      // Refused for where it goes (the allow-list, an internal address): no later attempt reaches it either.
      return { at, ms: Date.now() - started, error: (err as Error).message.slice(0, 200), retry: !policyRefusal(err) };
    }
  }

  return {
    /**
     * One attempt at delivering an event of the log: what the endpoint answered, whether another attempt may help,
     * and this worker's budget (how many attempts, how long between them), which the log follows. It answers rather
     * than fails, so the log records every attempt; Temporal retries it only when the worker dies under it.
     */
    async attemptLoggedEvent(input: {
      callbackUrl: string;
      event: IntegratorEvent & { sequence: number };
    }): Promise<{ attempt: DeliveryAttempt; outcome: 'delivered' | 'retry' | 'refused'; budget: CallbackDelivery }> {
      const url = deps.urlPolicy.check(input.callbackUrl, 'callbackUrl');
      if (!deps.callbackSigner)
        throw ApplicationFailure.nonRetryable('no ESIGN_CALLBACK_SECRETS to sign callbacks with', FailureType.CallbackRejected);
      const { retry, ...tried } = await attempt(url, input.event);
      const delivered = tried.status !== undefined && tried.status >= 200 && tried.status < 300;
      const outcome = delivered ? 'delivered' : retry ? 'retry' : 'refused';
      Context.current()
        .metricMeter.createCounter('esign_callback_attempts', 'attempts', 'Event deliveries to callback URLs, by result')
        .add(1, { result: outcome });
      return { attempt: tried, outcome, budget };
    },

    /**
     * Hands an event that comes after the transaction ended (`transaction.completed_late`) to its event log, which
     * numbers it after the others: signals the log if it runs, starts it again from its last state if it closed
     * (after its retention, or terminated by an operator: src/client/event-log-recovery.ts), or starts one if the
     * transaction never had one. A closed log whose state cannot be read fails this (retried) rather than start a
     * log numbered from 1 again. Idempotent: the log takes an event's key once.
     */
    async appendToEventLog(input: { referenceId: string; callbackUrl: string; event: IntegratorEvent }): Promise<void> {
      deps.urlPolicy.check(input.callbackUrl, 'callbackUrl');
      const { client, info } = Context.current();
      const workflowId = eventLogIdFor(input.referenceId);
      // A running log just takes the signal; a closed one starts again from its last state, delivering to the
      // endpoint of the transaction that now speaks (a referenceId used again may name another); else a new one.
      const { restart } = await eventLogState(client, input.referenceId);
      const start: EventLogInput = restart
        ? { ...restart, callbackUrl: input.callbackUrl }
        : { referenceId: input.referenceId, callbackUrl: input.callbackUrl, events: [] };
      await client.workflow.signalWithStart(EVENT_LOG_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: info.taskQueue,
        args: [start],
        signal: eventLogAppendSignal,
        signalArgs: [input.event],
      });
    },

    /** Records the outcome in the worker's log (the integrator hears of it through the event log). */
    async recordCompletion(input: { result: EsignTransactionResult; late?: boolean }): Promise<void> {
      const { result } = input;
      log.info('esign transaction finished', {
        referenceId: result.referenceId,
        status: result.status,
        transactionId: result.transactionId,
        archive: result.archive?.uri,
        late: input.late === true,
      });
    },
  };
}

/**
 * A callback's whole exchange ends by `ms`, or when the activity is cancelled: the timeouts undici takes are between
 * chunks, and an endpoint that trickles its answer a byte at a time would otherwise hold an activity slot for ever
 * (and each retry another).
 */
function callbackDeadline(ms: number): AbortSignal {
  return AbortSignal.any([Context.current().cancellationSignal, AbortSignal.timeout(ms)]);
}
