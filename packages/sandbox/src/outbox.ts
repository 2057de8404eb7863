import { randomUUID } from 'node:crypto';
import { isParticipantEvent, notificationOf, type EsignEventName } from '../../../src/esign/events.js';
import type { EsignWebhook } from '../../../src/esign/schemas.js';
import type { SandboxStore, TransactionRow } from './store.js';

export interface OutboxOptions {
  /** Where webhooks go; read per event, as tests point them at their receivers. */
  webhookUrls: () => readonly string[];
  /** Wakes the dispatcher once a change with webhooks is committed. */
  onEnqueued: () => void;
}

/** Returned by a change that turned out to change nothing: no webhook is queued. */
export const SKIP = Symbol('no change');

/**
 * Queues the provider's webhooks in the same SQLite transaction as the change
 * they announce, so a committed change always has its webhooks, and a
 * crashed one none (the transactional outbox).
 */
export class EventOutbox {
  readonly #store: SandboxStore;
  readonly #options: OutboxOptions;

  constructor(store: SandboxStore, options: OutboxOptions) {
    this.#store = store;
    this.#options = options;
  }

  /**
   * Applies `change` and queues `event` for transaction `t`, atomically;
   * returns what `change` returned. Participant events name their participant.
   */
  publish<T>(t: TransactionRow, event: EsignEventName, change: () => T, participantId?: string): T {
    const ids = { notificationId: randomUUID(), esignId: t.esignId, transactionId: t.id };
    if (isParticipantEvent(event) && !participantId) throw new Error(`${event} names its participant`);
    const notification: EsignWebhook = isParticipantEvent(event) ? notificationOf(event, ids, participantId!) : notificationOf(event, ids);
    const payload = JSON.stringify(notification);
    const urls = this.#options.webhookUrls();
    const result = this.#store.transaction(() => {
      const out = change();
      if (out === SKIP) return out;
      for (const url of urls)
        this.#store.enqueueDelivery({ notificationId: notification.data.notificationId, url, payload, now: Date.now() });
      return out;
    });
    if (urls.length > 0 && result !== SKIP) this.#options.onEnqueued();
    return result;
  }
}
