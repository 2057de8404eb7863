import { randomUUID } from 'node:crypto';
import type { EsignEndEvent } from '../esign/events.js';
import type { EsignEndWebhook } from '../esign/schemas.js';
import type { SandboxStore, TransactionRow } from './store.js';

export interface OutboxOptions {
  /** Where webhooks go; read per event, as tests point them at their receivers. */
  webhookUrls: () => readonly string[];
  /** Wakes the dispatcher once a change with webhooks is committed. */
  onEnqueued: () => void;
}

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

  /** Applies `change` and queues `event` for transaction `t`, atomically; returns what `change` returned. */
  publish<T>(t: TransactionRow, event: EsignEndEvent, change: () => T): T {
    const notification: EsignEndWebhook = {
      event,
      entity: 'esign',
      data: { notificationId: randomUUID(), entity_id: t.esignId, transaction_id: t.id },
    };
    const payload = JSON.stringify(notification);
    const urls = this.#options.webhookUrls();
    const result = this.#store.transaction(() => {
      const out = change();
      for (const url of urls)
        this.#store.enqueueDelivery({ notificationId: notification.data.notificationId, url, payload, now: Date.now() });
      return out;
    });
    if (urls.length > 0) this.#options.onEnqueued();
    return result;
  }
}
