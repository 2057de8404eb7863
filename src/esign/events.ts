// The provider's webhook events, declared once: the names, what each reports and which data it carries. The webhook
// schemas (src/esign/schemas.ts), the workflows' reading (workflows/notification.ts), the bridge, the sandbox and the
// explorer's model take them from here. Kept free of zod so that importing them does not put zod into the workflow
// sandbox. Choices the spec leaves open are rows 32-37 of docs/spec-gaps.md.

/** Statuses in which a transaction can no longer change at the provider. */
export const PROVIDER_END_STATUSES = ['completed', 'declined', 'cancelled', 'expired', 'deleted'] as const;
export type ProviderEndStatus = (typeof PROVIDER_END_STATUSES)[number];

/** A participant's progress as the provider sandbox's record reports it. */
export const PARTICIPANT_STATUSES = ['pending', 'viewed', 'signed', 'declined'] as const;
export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];

/**
 * Every provider event the orchestrator acts on. `ends`: the event ends the transaction at the provider, in that
 * status (the spec's one event, `esign-completed`, and the others in its envelope). `participant`: the event reports a
 * participant's progress, and its data names the participant (`participant_id`). A new event is a row here; the
 * compiler then points at every place that must handle it (docs/architecture.md, "Adding a provider event").
 */
export const PROVIDER_EVENTS = {
  'esign-completed': { ends: 'completed' },
  'esign-declined': { ends: 'declined' },
  'esign-cancelled': { ends: 'cancelled' },
  'esign-expired': { ends: 'expired' },
  'esign-deleted': { ends: 'deleted' },
  'esign-participant-signed': { participant: 'signed' },
  'esign-participant-viewed': { participant: 'viewed' },
} as const satisfies Record<`esign-${string}`, { ends: ProviderEndStatus } | { participant: ParticipantStatus }>;

type Events = typeof PROVIDER_EVENTS;
/** Every event the bridge forwards to the workflows. */
export type EsignEventName = keyof Events;
export type EsignEndEvent = { [E in EsignEventName]: Events[E] extends { ends: string } ? E : never }[EsignEventName];
export type EsignParticipantEvent = Exclude<EsignEventName, EsignEndEvent>;

const names = Object.keys(PROVIDER_EVENTS) as EsignEventName[];
export const ESIGN_EVENTS: readonly EsignEventName[] = names;
export const ESIGN_END_EVENTS = names.filter((e): e is EsignEndEvent => 'ends' in PROVIDER_EVENTS[e]);
export const ESIGN_PARTICIPANT_EVENTS = names.filter((e): e is EsignParticipantEvent => 'participant' in PROVIDER_EVENTS[e]);

export const ESIGN_COMPLETED_EVENT = 'esign-completed' satisfies EsignEndEvent;
export const ESIGN_DECLINED_EVENT = 'esign-declined' satisfies EsignEndEvent;
export const ESIGN_CANCELLED_EVENT = 'esign-cancelled' satisfies EsignEndEvent;
export const ESIGN_EXPIRED_EVENT = 'esign-expired' satisfies EsignEndEvent;
export const ESIGN_DELETED_EVENT = 'esign-deleted' satisfies EsignEndEvent;
export const ESIGN_PARTICIPANT_SIGNED_EVENT = 'esign-participant-signed' satisfies EsignParticipantEvent;
export const ESIGN_PARTICIPANT_VIEWED_EVENT = 'esign-participant-viewed' satisfies EsignParticipantEvent;

export function isEndEvent(event: string): event is EsignEndEvent {
  return (ESIGN_END_EVENTS as readonly string[]).includes(event);
}

export function isParticipantEvent(event: string): event is EsignParticipantEvent {
  return (ESIGN_PARTICIPANT_EVENTS as readonly string[]).includes(event);
}

export function isProviderEndStatus(status: string | null | undefined): status is ProviderEndStatus {
  return (PROVIDER_END_STATUSES as readonly (string | null | undefined)[]).includes(status);
}

/** The status an end event reports: `esign-declined` → `declined`. */
export function endStatusOf(event: EsignEndEvent): ProviderEndStatus {
  return PROVIDER_EVENTS[event].ends;
}

/** The ids every event's `data` carries, each a non-empty string (a UUID in the schema). */
export const EVENT_DATA_IDS = ['notificationId', 'entity_id', 'transaction_id'] as const;
/** What a participant event's `data` carries besides. */
export const PARTICIPANT_DATA_ID = 'participant_id';

/** One event as the provider sends it: the shape the schemas check and every sender builds with `notificationOf`. */
export type ProviderNotification<E extends EsignEventName = EsignEventName> = E extends EsignEventName
  ? {
      event: E;
      entity: 'esign';
      data: Record<(typeof EVENT_DATA_IDS)[number], string> &
        (E extends EsignParticipantEvent ? Record<typeof PARTICIPANT_DATA_ID, string> : unknown);
    }
  : never;

/** Builds one event for a sender (the sandbox, the explorer's model): a participant event names its participant. */
export function notificationOf<E extends EsignEventName>(
  event: E,
  ids: { notificationId: string; esignId: string; transactionId: string },
  ...participant: E extends EsignParticipantEvent ? [participantId: string] : []
): ProviderNotification<E> {
  const [participantId] = participant as [string?];
  return {
    event,
    entity: 'esign',
    data: {
      notificationId: ids.notificationId,
      entity_id: ids.esignId,
      transaction_id: ids.transactionId,
      ...(participantId !== undefined ? { [PARTICIPANT_DATA_ID]: participantId } : {}),
    },
  } as ProviderNotification<E>;
}
