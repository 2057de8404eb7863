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

export const esignSearchAttributes = [EsignReferenceId, EsignTransactionId, EsignId, EsignStatus] as const;
