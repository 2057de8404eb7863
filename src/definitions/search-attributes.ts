import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes the transaction workflow keeps current. They are
 * never encrypted by the payload codec, so they hold provider ids and statuses
 * only: no names, no e-mail addresses.
 */
export const EsignReferenceId = defineSearchAttributeKey('EsignReferenceId', SearchAttributeType.KEYWORD);
export const EsignTransactionId = defineSearchAttributeKey('EsignTransactionId', SearchAttributeType.KEYWORD);
export const EsignId = defineSearchAttributeKey('EsignId', SearchAttributeType.KEYWORD);
export const EsignStatus = defineSearchAttributeKey('EsignStatus', SearchAttributeType.KEYWORD);
/** How many participants have signed, e.g. `EsignSignedCount >= 1`. */
export const EsignSignedCount = defineSearchAttributeKey('EsignSignedCount', SearchAttributeType.INT);
/** Participant ids (never names) still to sign, e.g. `EsignWaitingFor = "<participant id>"`. */
export const EsignWaitingFor = defineSearchAttributeKey('EsignWaitingFor', SearchAttributeType.KEYWORD_LIST);

/** The bulk send a transaction belongs to (and the batch's own workflow), e.g. `EsignBatchId = "bulk-q3-ndas-…"`. */
export const EsignBatchId = defineSearchAttributeKey('EsignBatchId', SearchAttributeType.KEYWORD);

/** The integrator's endpoint as a transaction's event log sees it (`ok`, `failing`): `EsignCallbackHealth = "failing"`. */
export const EsignCallbackHealth = defineSearchAttributeKey('EsignCallbackHealth', SearchAttributeType.KEYWORD);

export const esignSearchAttributes = [
  EsignReferenceId,
  EsignTransactionId,
  EsignId,
  EsignStatus,
  EsignSignedCount,
  EsignWaitingFor,
  EsignBatchId,
  EsignCallbackHealth,
] as const;

/** The type names the Temporal CLI uses (`--search-attribute Name=Type`, `search-attribute create --type`). */
export function cliTypeOf(key: (typeof esignSearchAttributes)[number]): 'Keyword' | 'Int' | 'KeywordList' {
  return key.type === SearchAttributeType.INT ? 'Int' : key.type === SearchAttributeType.KEYWORD_LIST ? 'KeywordList' : 'Keyword';
}
