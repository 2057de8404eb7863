/**
 * Stands in for a transaction workflow that has ended, for tests of what an
 * inbox finds when a completion reaches it after its owner's inbox closed:
 * registered under the transaction workflow's type on a worker of its own,
 * with the transaction workflow's id, input and search attributes, it ends at
 * once with the result it is given (e.g. one that carries `originals`, which
 * a real run returns once it has uploaded).
 */
import type { EsignTransactionResult } from '../../src/definitions/transaction.js';

export async function esignTransaction(
  _input: { referenceId: string; archivePrefix?: string; callbackUrl?: string },
  _continued: undefined,
  result: EsignTransactionResult,
): Promise<EsignTransactionResult> {
  return result;
}
