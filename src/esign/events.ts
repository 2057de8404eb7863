// Names of the provider's webhook events and transaction statuses that
// workflow code needs too: kept free of zod so that importing them does not
// put zod into the workflow sandbox. Choices the spec leaves open are rows
// 32-36 of docs/spec-gaps.md.

/** The spec's one event (6): every participant has signed. */
export const ESIGN_COMPLETED_EVENT = 'esign-completed';
/** A participant declined to sign; the transaction is `declined`. */
export const ESIGN_DECLINED_EVENT = 'esign-declined';
/** The provider ended the transaction itself (its own cancel, expiry or deletion). */
export const ESIGN_CANCELLED_EVENT = 'esign-cancelled';
export const ESIGN_EXPIRED_EVENT = 'esign-expired';
export const ESIGN_DELETED_EVENT = 'esign-deleted';

/** Every event that ends a transaction at the provider, in the same envelope as `esign-completed`. */
export const ESIGN_END_EVENTS = [
  ESIGN_COMPLETED_EVENT,
  ESIGN_DECLINED_EVENT,
  ESIGN_CANCELLED_EVENT,
  ESIGN_EXPIRED_EVENT,
  ESIGN_DELETED_EVENT,
] as const;
export type EsignEndEvent = (typeof ESIGN_END_EVENTS)[number];

/** A participant finished signing (the transaction may still wait for others). */
export const ESIGN_PARTICIPANT_SIGNED_EVENT = 'esign-participant-signed';
/** A participant opened the signing page for the first time. */
export const ESIGN_PARTICIPANT_VIEWED_EVENT = 'esign-participant-viewed';
/** Progress events: the envelope of the end events, plus `data.participant_id` (docs/spec-gaps.md, row 37). */
export const ESIGN_PARTICIPANT_EVENTS = [ESIGN_PARTICIPANT_SIGNED_EVENT, ESIGN_PARTICIPANT_VIEWED_EVENT] as const;
export type EsignParticipantEvent = (typeof ESIGN_PARTICIPANT_EVENTS)[number];

export function isParticipantEvent(event: string): event is EsignParticipantEvent {
  return (ESIGN_PARTICIPANT_EVENTS as readonly string[]).includes(event);
}

/** Every event the bridge forwards to the workflows. */
export const ESIGN_EVENTS = [...ESIGN_END_EVENTS, ...ESIGN_PARTICIPANT_EVENTS] as const;
export type EsignEventName = (typeof ESIGN_EVENTS)[number];

export function isEndEvent(event: string): event is EsignEndEvent {
  return (ESIGN_END_EVENTS as readonly string[]).includes(event);
}

/** Statuses in which a transaction can no longer change at the provider. */
export const PROVIDER_END_STATUSES = ['completed', 'declined', 'cancelled', 'expired', 'deleted'] as const;
export type ProviderEndStatus = (typeof PROVIDER_END_STATUSES)[number];

export function isProviderEndStatus(status: string | null | undefined): status is ProviderEndStatus {
  return (PROVIDER_END_STATUSES as readonly (string | null | undefined)[]).includes(status);
}

/** The status an end event reports: `esign-declined` → `declined`. */
export function endStatusOf(event: EsignEndEvent): ProviderEndStatus {
  return event.slice('esign-'.length) as ProviderEndStatus;
}

/** A participant's progress as the provider sandbox's record reports it. */
export const PARTICIPANT_STATUSES = ['pending', 'viewed', 'signed', 'declined'] as const;
export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];
