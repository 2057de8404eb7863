import {
  ESIGN_COMPLETED_EVENT,
  ESIGN_EVENTS,
  EVENT_DATA_IDS,
  isParticipantEvent,
  PARTICIPANT_DATA_ID,
  type EsignEventName,
} from '../src/esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook } from '../src/esign/schemas.js';

/**
 * The fields of a provider notification that workflows act on, checked
 * without zod (workflows/README.md says why). The bridge has already
 * validated the webhook against the full schema; this guards against a
 * hand-sent signal (CLI, UI). Returns why it is unusable, as a string.
 */
export function readNotification(payload: unknown, allowed: readonly EsignEventName[] = ESIGN_EVENTS): EsignWebhook | string {
  if (typeof payload !== 'object' || payload === null) return 'not an object';
  const { event, entity, data } = payload as Record<string, unknown>;
  if (!(allowed as readonly unknown[]).includes(event)) return `event: expected one of ${allowed.join(', ')}`;
  if (entity !== 'esign') return 'entity: expected "esign"';
  if (typeof data !== 'object' || data === null) return 'data: expected an object';
  const fields = data as Record<string, unknown>;
  const ids = isParticipantEvent(event as string) ? [...EVENT_DATA_IDS, PARTICIPANT_DATA_ID] : EVENT_DATA_IDS;
  for (const key of ids) {
    if (typeof fields[key] !== 'string' || fields[key] === '') return `data.${key}: expected a non-empty string`;
  }
  // Only the ids the event carries, whatever else a hand-sent signal had.
  return { event, entity: 'esign', data: Object.fromEntries(ids.map((key) => [key, fields[key]])) } as EsignWebhook;
}

/** The `esignCompleted` signal's payload: an `esign-completed` notification only. */
export function readCompletedNotification(payload: unknown): EsignCompletedWebhook | string {
  return readNotification(payload, [ESIGN_COMPLETED_EVENT]) as EsignCompletedWebhook | string;
}
