import { setTimeout } from 'node:timers/promises';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { EsignClient } from '../src/esign/client.js';
import { EsignApiError } from '../src/esign/errors.js';
import type { ParticipantStatus } from '../src/esign/events.js';
import { providerFailure } from '../src/esign/temporal-failure.js';
import type { CreateTransactionRequest, IframeStyle, TransactionRecord, UpdateTransactionRequest } from '../src/esign/schemas.js';
import { FailureType } from '../src/failures.js';
import { callProvider, callProviderThroughRateLimits, whileHeartbeating } from './support/heartbeat.js';
import { DEFAULT_WORKER_CLOCK_SKEW_MS, WriteAttempt } from './support/write-attempts.js';

export interface TransactionDeps {
  client: EsignClient;
  /** How many list pages (newest first) a retried create searches for its earlier attempt when records carry no `createdAt`. */
  createLookupPages?: number;
  /** How far two workers' clocks may be apart (activities/support/write-attempts.ts); 5 s by default. */
  clockSkewMs?: number;
}

/** The provider ids and status: all the workflow keeps of a record (no personal data in history). */
export interface TransactionRef {
  transactionId: string;
  esignId: string;
  status: string;
}

function toRef(record: TransactionRecord, what: string): TransactionRef {
  if (!record.id || !record.esignId) {
    throw ApplicationFailure.nonRetryable(`${what}: the provider's response has no id/esignId`, FailureType.ProviderContract);
  }
  return { transactionId: record.id, esignId: record.esignId, status: record.status };
}

/** One participant's progress, when the provider reports it (docs/spec-gaps.md, row 33). */
export interface ParticipantState {
  id: string;
  status: ParticipantStatus;
  /** When the participant signed or declined. */
  at?: string;
  /** A decliner's reason, in their words (encrypted in history like every payload). */
  reason?: string;
}

/** The provider's view of a transaction: status, and each participant's progress when reported. */
export interface TransactionState extends TransactionRef {
  participants?: ParticipantState[];
}

/** The outcome of taking a transaction back from its signers (a replace to `draft`). */
export type WithdrawOutcome =
  | { withdrawn: true; status: string }
  /**
   * Refused, or ignored: the provider's status afterwards, and who has signed; neither when the provider refused
   * (409) and then did not answer the read that would say (the loop reads it at its next poll).
   */
  | { withdrawn: false; status?: string; participants?: ParticipantState[] };

/** Attempts at reading how a transaction stands after a refused withdraw, before answering without it. */
const READS_AFTER_REFUSAL = 3;

const rethrowProvider = (err: unknown): never => {
  throw providerFailure(err);
};

/**
 * A final failure (not retried, so no retry delay to keep), its first detail (the provider's status:
 * workflows/transaction/steps.ts `providerRefusal`) also saying until when a replace given up on may still land
 * (`landsUntilOf` there reads it).
 */
function withLandsUntil(failure: ApplicationFailure, landsUntil: number): ApplicationFailure {
  const [first, ...rest] = failure.details ?? [];
  const details = [{ ...(typeof first === 'object' && first !== null ? first : {}), landsUntil }, ...rest];
  const { message, type, nonRetryable, cause, category } = failure;
  return new ApplicationFailure(message, type, nonRetryable, details, cause, undefined, category);
}

function toState(transactionId: string, record: TransactionRecord): TransactionState {
  const reported = record.participants.some((p) => p.status !== undefined);
  return {
    transactionId,
    esignId: record.esignId ?? '',
    status: record.status,
    ...(reported
      ? {
          participants: record.participants.map((p) => ({
            id: p.id,
            status: p.status ?? 'pending',
            ...(p.signedAt || p.declinedAt ? { at: (p.signedAt ?? p.declinedAt)! } : {}),
            ...(p.declineReason ? { reason: p.declineReason } : {}),
          })),
        }
      : {}),
  };
}

const samePaths = (record: TransactionRecord, paths: readonly string[]) =>
  record.documents.length === paths.length && record.documents.every((d, i) => d.StoragePath === paths[i]);

/**
 * Whether the provider's record is what a replace asked for: its status, its participants by id in order (a correction
 * gives each new or changed participant a new id), its documents, and each message field the request sets and the
 * record shows. A field the record does not show cannot be confirmed, so it is not taken as held. A later status (the
 * transaction signed and completed meanwhile) is not: a replace that changes no participant would match it too, and
 * one never taken would be answered as taken.
 */
function holdsWhatWasAsked(record: TransactionRecord, request: UpdateTransactionRequest): boolean {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const fields = ['emailSubject', 'personalizedMessage', 'signingOrder', 'notifyParticipants'] as const;
  return (
    record.status === request.status &&
    same(
      record.participants.map((p) => p.id),
      request.participants.map((p) => p.id),
    ) &&
    same(
      record.documents.map((d) => d.StoragePath),
      request.documents.map((d) => d.StoragePath),
    ) &&
    fields.every((f) => request[f] === undefined || same(record[f], request[f]))
  );
}

const LOOKUP_PAGE = 100;
/** The provider's clock against ours: a record created by the first attempt is never taken for older than it. */
const CREATE_CLOCK_SKEW_MS = 10 * 60_000;
/** A bound on the walk whatever the dates say (20,000 records); past it the attempt fails and is retried. */
const MAX_LOOKUP_PAGES = 200;

export function createTransactionActivities(deps: TransactionDeps) {
  const lookupPages = deps.createLookupPages ?? 10;

  /** Throws, saying why the 404 is not taken as the provider's answer, unless the provider answers its list. */
  async function providerAnswersItsList(notFound: EsignApiError, signal: AbortSignal): Promise<void> {
    const listed = await deps.client.answersItsList({ signal }).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    if (listed === undefined) return;
    throw ApplicationFailure.create({
      message: `${notFound.message}; the provider did not answer its list either (${listed.message}), so the 404 is not taken as its answer`,
      type: FailureType.ProviderUnavailable,
      details: [{ status: null, kind: 'not_found_unconfirmed' }],
    });
  }

  /**
   * Finds the transaction an earlier attempt created: StoragePaths are unique
   * per upload, so a record with our referenceId and exactly our StoragePaths
   * can only be ours. A record without ids (the short create form) is also
   * looked up this way. The list is newest first (docs/spec-gaps.md, row 6): the
   * walk goes on while its records are newer than the first attempt (less a
   * clock-skew margin), however many others were created since (a bulk send's);
   * records without `createdAt` bound it by `createLookupPages` pages.
   */
  async function findExisting(
    request: CreateTransactionRequest,
    signal: AbortSignal,
    since: number,
    details: () => unknown,
  ): Promise<TransactionRecord | undefined> {
    const paths = request.documents.map((d) => d.StoragePath);
    const cutoff = since - CREATE_CLOCK_SKEW_MS;
    for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
      const list = await callProviderThroughRateLimits(
        () => deps.client.listTransactions({ limit: LOOKUP_PAGE, offset: page * LOOKUP_PAGE }, { signal }),
        signal,
        details,
      );
      const found = list.data.find((t) => t.referenceId === request.referenceId && samePaths(t, paths));
      if (found) return found;
      if ((page + 1) * LOOKUP_PAGE >= list.total || list.data.length === 0) return undefined;
      const oldest = Date.parse(list.data.at(-1)!.createdAt ?? '');
      const newerThanFirstAttempt = Number.isFinite(oldest) && oldest >= cutoff;
      if (!newerThanFirstAttempt && page + 1 >= lookupPages) return undefined;
    }
    throw ApplicationFailure.retryable(
      `more than ${MAX_LOOKUP_PAGES * LOOKUP_PAGE} transactions were created since this create was first tried; looked again later`,
      FailureType.ProviderUnavailable,
    );
  }

  /** The attempt of a write activity: it returns once it may write (activities/support/write-attempts.ts). */
  const beginWrite = (what: string) =>
    WriteAttempt.begin(what, {
      abandonsAfterMs: deps.client.abandonsAfterMs,
      clockSkewMs: deps.clockSkewMs ?? DEFAULT_WORKER_CLOCK_SKEW_MS,
    });

  return {
    /** Creates the provider transaction exactly once, even when a response was lost and the activity retried. */
    async createTransaction(request: CreateTransactionRequest): Promise<TransactionRef> {
      const ctx = Context.current();
      const attempt = await beginWrite('create');
      if (attempt.retried) {
        const existing = await findExisting(request, ctx.cancellationSignal, ctx.info.scheduledTimestampMs, attempt.details).catch(
          (err: unknown) => {
            // The lookup failed before this attempt wrote anything: its retry need not wait for it.
            attempt.nothingSent();
            throw err;
          },
        );
        if (existing) {
          log.info('create retried: found the transaction an earlier attempt created', { transactionId: existing.id });
          return toRef(existing, 'createTransaction');
        }
      }
      const record = await attempt.send((signal) => deps.client.createTransaction(request, { signal }));
      if (record.id && record.esignId) return toRef(record, 'createTransaction');
      // Short response form: the ids come from the list.
      const listed = await findExisting(request, ctx.cancellationSignal, ctx.info.currentAttemptScheduledTimestampMs, attempt.details);
      if (!listed)
        throw ApplicationFailure.retryable('created transaction not yet visible in the provider list', FailureType.ProviderUnavailable);
      return toRef(listed, 'createTransaction');
    },

    /**
     * The provider's status of the transaction, with each participant's progress when the provider reports it. A 404
     * is the provider's answer only while it answers its list: a wrong base URL, or a gateway answering 404 for
     * everything, must never be taken for the provider not having the transaction (the workflow ends it `deleted` on
     * a second 404, workflows/transaction/steps.ts `readState`).
     */
    async getTransactionStatus(transactionId: string): Promise<TransactionState> {
      const signal = Context.current().cancellationSignal;
      const record = await whileHeartbeating(() => deps.client.getTransaction(transactionId, { signal })).catch(async (err: unknown) => {
        if (err instanceof EsignApiError && err.kind === 'http' && err.status === 404) await providerAnswersItsList(err, signal);
        throw providerFailure(err);
      });
      return toState(transactionId, record);
    },

    /**
     * Takes the transaction away from its signers before the workflow reports
     * it cancelled or expired: the spec has no cancel, so a replace back to
     * `draft` (docs/spec-gaps.md, row 34), then a read to see that it held. A
     * provider that refuses (409: someone has signed, or it has ended) is not
     * an error: the outcome says what the provider holds instead.
     */
    async withdrawTransaction(input: {
      transactionId: string;
      request: UpdateTransactionRequest;
      /** Until when a replace given up on may still land (its `landsUntil`). */
      landsUntil?: number;
    }): Promise<WithdrawOutcome> {
      const signal = Context.current().cancellationSignal;
      const withdrawOnce = async (): Promise<TransactionState | undefined> => {
        try {
          // Taken: the provider's answer is the transaction as it now stands, so a withdraw needs no read (which may
          // be what is failing at the provider).
          return toState(
            input.transactionId,
            await deps.client.updateTransaction(input.transactionId, { ...input.request, status: 'draft' }, { signal }),
          );
        } catch (err) {
          if (!(err instanceof EsignApiError && err.kind === 'http' && err.status === 409)) throw providerFailure(err);
          log.info('the provider refused to withdraw the transaction', { transactionId: input.transactionId, reason: err.message });
        }
        // Refused (409): how it stands and who signed, which the refusal does not say. A few attempts only: the
        // refusal is the answer, and a cancel must not wait on the provider's reads for as long as they fail.
        for (let attempt = 1; ; attempt++) {
          try {
            return toState(input.transactionId, await deps.client.getTransaction(input.transactionId, { signal }));
          } catch (err) {
            if (signal.aborted || attempt >= READS_AFTER_REFUSAL) {
              log.warn('the provider refused to withdraw the transaction and did not say how it stands', {
                transactionId: input.transactionId,
                error: (providerFailure(err) as Error).message,
              });
              return undefined;
            }
            await setTimeout(1_000 * attempt, undefined, { signal });
          }
        }
      };
      return whileHeartbeating(async (): Promise<WithdrawOutcome> => {
        let state = await withdrawOnce();
        if (!state) return { withdrawn: false };
        // A replace given up on may still land (updateTransaction's landsUntil): withdrawn only if it held past then.
        while (state.status === 'draft' && input.landsUntil !== undefined && Date.now() < input.landsUntil) {
          await setTimeout(input.landsUntil - Date.now(), undefined, { signal });
          state = toState(input.transactionId, await deps.client.getTransaction(input.transactionId, { signal }).catch(rethrowProvider));
          if (state.status === 'esign_pending') {
            log.warn('a replace given up on reached the provider after the withdraw: withdrawn again', {
              transactionId: input.transactionId,
            });
            const again = await withdrawOnce();
            if (!again) return { withdrawn: false };
            state = again;
          }
        }
        if (state.status === 'draft') return { withdrawn: true, status: state.status };
        return { withdrawn: false, status: state.status, ...(state.participants ? { participants: state.participants } : {}) };
      });
    },

    /** What a late completion needs to archive a transaction nobody waits for: its ids, reference and documents. */
    async describeTransaction(
      transactionId: string,
    ): Promise<TransactionRef & { referenceId: string | null; documents: { title: string; StoragePath: string }[] }> {
      const signal = Context.current().cancellationSignal;
      const record = await whileHeartbeating(() =>
        deps.client.getTransaction(transactionId, { signal }).catch((err: unknown) => {
          // A webhook naming a transaction the provider does not know: nothing to archive.
          if (err instanceof EsignApiError && err.kind === 'http' && err.status === 404) return undefined;
          throw providerFailure(err);
        }),
      );
      if (!record) return { transactionId, esignId: '', status: 'not_found', referenceId: null, documents: [] };
      return {
        transactionId,
        esignId: record.esignId ?? '',
        status: record.status,
        referenceId: record.referenceId ?? null,
        documents: record.documents.map((d, i) => ({ title: d.title ?? `Document ${i + 1}`, StoragePath: d.StoragePath })),
      };
    },

    /**
     * Replaces the transaction. A retry writes only once an earlier attempt given up on can no longer reach the
     * provider (activities/support/write-attempts.ts), so that it cannot land over this one, nor over a later replace
     * or correction. The answer of a retry still says until when such an attempt may land (`landsUntil`), and so does
     * its failure when the retry is refused (a 4xx): a withdraw that follows makes sure it held past then, a second
     * guard for a provider slower than the client's bound.
     */
    async updateTransaction(input: {
      transactionId: string;
      request: UpdateTransactionRequest;
    }): Promise<TransactionRef & { landsUntil?: number }> {
      const { cancellationSignal } = Context.current();
      const attempt = await beginWrite('replace');
      const landsUntil = () => (attempt.retried ? Date.now() + deps.client.abandonsAfterMs : undefined);
      const record = await attempt
        .send((signal) => deps.client.updateTransaction(input.transactionId, input.request, { signal }))
        .catch(async (err: unknown) => {
          // Only a failure that ends the activity reaches the workflow: one retried is answered by a later attempt.
          const until = landsUntil();
          if (until === undefined || !(err instanceof ApplicationFailure && err.nonRetryable)) throw err;
          // Refused, but an earlier attempt whose answer was lost may have been taken: if the provider now holds what
          // was asked, it was, and the refusal is of the repeat (the workflow must not report a correction refused
          // that its signers then sign).
          const held = await deps.client.getTransaction(input.transactionId, { signal: cancellationSignal }).catch(() => undefined);
          if (held && holdsWhatWasAsked(held, input.request)) {
            log.info('replace retried and refused: the provider holds what was asked, so an earlier attempt was taken', {
              transactionId: input.transactionId,
            });
            return held;
          }
          throw withLandsUntil(err, until);
        });
      const ref = { transactionId: input.transactionId, esignId: record.esignId ?? '', status: record.status };
      const until = landsUntil();
      return until !== undefined ? { ...ref, landsUntil: until } : ref;
    },

    async createSigningUrl(input: { esignId: string; participantIds: string[]; style?: IframeStyle }): Promise<{ url: string }> {
      const url = await callProvider(() =>
        deps.client.createIframeUrl(
          {
            type: 'esign',
            ...(input.style ? { style: input.style } : {}),
            data: { esignId: input.esignId, participantIds: input.participantIds },
          },
          { signal: Context.current().cancellationSignal },
        ),
      );
      return { url };
    },
  };
}
