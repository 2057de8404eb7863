import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { EsignClient } from '../src/esign/client.js';
import type { CreateTransactionRequest, IframeStyle, TransactionRecord, UpdateTransactionRequest } from '../src/esign/schemas.js';
import { FailureType } from '../src/failures.js';
import { callProvider } from '../src/worker/heartbeat.js';

export interface TransactionDeps {
  client: EsignClient;
  /** How many list pages (newest first) a retried create searches for its earlier attempt. */
  createLookupPages?: number;
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

const samePaths = (record: TransactionRecord, paths: readonly string[]) =>
  record.documents.length === paths.length && record.documents.every((d, i) => d.StoragePath === paths[i]);

export function createTransactionActivities(deps: TransactionDeps) {
  const lookupPages = deps.createLookupPages ?? 10;

  /**
   * Finds the transaction an earlier attempt created: StoragePaths are unique
   * per upload, so a record with our referenceId and exactly our StoragePaths
   * can only be ours. A record without ids (the short create form) is also
   * looked up this way.
   */
  async function findExisting(request: CreateTransactionRequest, signal: AbortSignal): Promise<TransactionRecord | undefined> {
    const paths = request.documents.map((d) => d.StoragePath);
    for (let page = 0; page < lookupPages; page++) {
      const list = await callProvider(() => deps.client.listTransactions({ limit: 100, offset: page * 100 }, { signal }));
      const found = list.data.find((t) => t.referenceId === request.referenceId && samePaths(t, paths));
      if (found) return found;
      if ((page + 1) * 100 >= list.total) return undefined;
    }
    return undefined;
  }

  return {
    /** Creates the provider transaction exactly once, even when a response was lost and the activity retried. */
    async createTransaction(request: CreateTransactionRequest): Promise<TransactionRef> {
      const ctx = Context.current();
      if (ctx.info.attempt > 1) {
        const existing = await findExisting(request, ctx.cancellationSignal);
        if (existing) {
          log.info('create retried: found the transaction an earlier attempt created', { transactionId: existing.id });
          return toRef(existing, 'createTransaction');
        }
      }
      const record = await callProvider(() => deps.client.createTransaction(request, { signal: ctx.cancellationSignal }));
      if (record.id && record.esignId) return toRef(record, 'createTransaction');
      // Short response form: the ids come from the list.
      const listed = await findExisting(request, ctx.cancellationSignal);
      if (!listed)
        throw ApplicationFailure.retryable('created transaction not yet visible in the provider list', FailureType.ProviderUnavailable);
      return toRef(listed, 'createTransaction');
    },

    async getTransactionStatus(transactionId: string): Promise<TransactionRef> {
      const record = await callProvider(() => deps.client.getTransaction(transactionId, { signal: Context.current().cancellationSignal }));
      return { transactionId, esignId: record.esignId ?? '', status: record.status };
    },

    async updateTransaction(input: { transactionId: string; request: UpdateTransactionRequest }): Promise<TransactionRef> {
      const record = await callProvider(() =>
        deps.client.updateTransaction(input.transactionId, input.request, { signal: Context.current().cancellationSignal }),
      );
      return { transactionId: input.transactionId, esignId: record.esignId ?? '', status: record.status };
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
