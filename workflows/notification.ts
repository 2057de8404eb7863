import { ESIGN_COMPLETED_EVENT } from '../src/esign/events.js';
import type { EsignCompletedWebhook } from '../src/esign/schemas.js';

/**
 * The fields of a completion notification that workflows act on, checked
 * without zod (workflows/README.md says why). The bridge has already
 * validated the webhook against the full schema; this guards against a
 * hand-sent signal (CLI, UI).
 */
export function readCompletedNotification(payload: unknown): EsignCompletedWebhook | string {
  if (typeof payload !== 'object' || payload === null) return 'not an object';
  const { event, entity, data } = payload as Record<string, unknown>;
  if (event !== ESIGN_COMPLETED_EVENT) return `event: expected "${ESIGN_COMPLETED_EVENT}"`;
  if (entity !== 'esign') return 'entity: expected "esign"';
  if (typeof data !== 'object' || data === null) return 'data: expected an object';
  const fields = data as Record<string, unknown>;
  for (const key of ['notificationId', 'entity_id', 'transaction_id'] as const) {
    if (typeof fields[key] !== 'string' || fields[key] === '') return `data.${key}: expected a non-empty string`;
  }
  return {
    event: ESIGN_COMPLETED_EVENT,
    entity: 'esign',
    data: {
      notificationId: fields.notificationId as string,
      entity_id: fields.entity_id as string,
      transaction_id: fields.transaction_id as string,
    },
  };
}
