/**
 * Who owns a provider transaction. A webhook names only the provider's ids; the
 * transaction workflow is keyed by our referenceId (`esign-<referenceId>`), which
 * the provider's record holds. One read per transaction per bridge process: the
 * referenceId of a provider transaction never changes, so it is remembered.
 */
import type { EsignClient } from '../esign/client.js';
import { EsignApiError } from '../esign/errors.js';

export interface OwnerDirectory {
  /** The referenceId the provider's record names, or null when the provider does not know the transaction or names none. */
  referenceOf(transactionId: string): Promise<string | null>;
  /** The provider's status now (read every time; the referenceId it names is remembered), or null when it does not know the transaction. */
  statusOf(transactionId: string): Promise<string | null>;
}

/** The provider could not be asked, or does not yet confirm what the webhook says: the bridge answers 503 and the provider redelivers. */
export class OwnerLookupError extends Error {
  override readonly name = 'OwnerLookupError';
}

export function providerOwners(
  provider: Pick<EsignClient, 'getTransaction'>,
  options: { capacity?: number; timeoutMs?: number } = {},
): OwnerDirectory {
  const capacity = options.capacity ?? 10_000;
  const known = new Map<string, string>();
  const read = async (transactionId: string) => {
    try {
      return await provider.getTransaction(transactionId, { signal: AbortSignal.timeout(options.timeoutMs ?? 5_000) });
    } catch (err) {
      // The provider says no (unknown, or an id it cannot take): nobody owns it. Not our credentials or its limits.
      if (
        err instanceof EsignApiError &&
        err.kind === 'http' &&
        err.status !== undefined &&
        err.status < 500 &&
        ![401, 403, 408, 429].includes(err.status)
      )
        return null;
      throw new OwnerLookupError(`the provider could not be asked about the transaction: ${(err as Error).message}`, { cause: err });
    }
  };
  const remember = (transactionId: string, record: { referenceId?: string | undefined } | null): string | null => {
    if (!record?.referenceId) return null;
    known.set(transactionId, record.referenceId);
    if (known.size > capacity) known.delete(known.keys().next().value!);
    return record.referenceId;
  };
  return {
    async referenceOf(transactionId) {
      const cached = known.get(transactionId);
      if (cached !== undefined) return cached;
      return remember(transactionId, await read(transactionId));
    },
    async statusOf(transactionId) {
      const record = await read(transactionId);
      remember(transactionId, record);
      return record?.status ?? null;
    },
  };
}
