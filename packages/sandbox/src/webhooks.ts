import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import type { FaultInjector } from './faults.js';
import type { DeliveryRecord } from '../../../src/client/sandbox-control.js';
import type { SandboxStore } from './store.js';

export interface WebhookDispatcherOptions {
  /** `whsec_…` secret the receiver verifies with. */
  secret: string;
  maxAgeMs: number;
  faults: FaultInjector;
  /** Poll period for due deliveries; a new delivery also wakes the loop. */
  pollMs?: number;
  requestTimeoutMs?: number;
  log?: (line: Record<string, unknown>) => void;
}

/** Exponential backoff: 1 s, 2 s, 4 s … capped at 5 minutes, with ±20 % jitter. */
export function backoffMs(attempts: number): number {
  const base = Math.min(1000 * 2 ** Math.max(0, attempts - 1), 300_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Delivers completion webhooks from the durable outbox in SQLite, signed per
 * Standard Webhooks. A delivery is retried until a 2xx or until it is older
 * than `maxAgeMs`; because the outbox is on disk, a restart resumes it.
 */
export class WebhookDispatcher {
  readonly #store: SandboxStore;
  readonly #options: Required<Omit<WebhookDispatcherOptions, 'log'>> & Pick<WebhookDispatcherOptions, 'log'>;
  readonly #signer: Webhook;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;
  #inFlight = new Set<number>();

  constructor(store: SandboxStore, options: WebhookDispatcherOptions) {
    this.#store = store;
    this.#options = { pollMs: 250, requestTimeoutMs: 10_000, ...options };
    this.#signer = new Webhook(options.secret);
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** Wakes the loop now (a delivery was just enqueued). */
  kick(): void {
    if (!this.#stopped && !this.#running) this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#running = this.#tick().finally(() => {
        this.#running = undefined;
        if (!this.#stopped) this.#schedule(this.#options.pollMs);
      });
    }, ms);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const due = this.#store.dueDeliveries(Date.now(), 32).filter((d) => !this.#inFlight.has(d.id));
    await Promise.all(due.map((d) => this.#deliver(d)));
  }

  async #deliver(d: DeliveryRecord): Promise<void> {
    this.#inFlight.add(d.id);
    try {
      // Faults are decided at the first attempt only, so a drop is final.
      const fault = d.attempts === 0 ? this.#options.faults.forWebhook() : undefined;
      if (fault === 'drop') {
        this.#store.recordAttempt(d.id, { status: 'dropped', error: 'dropped by fault injection' });
        this.#options.log?.({ msg: 'webhook dropped (fault injection)', notificationId: d.notificationId, url: d.url });
        return;
      }
      const error = await this.#send(d);
      if (error === undefined && fault === 'duplicate') await this.#send(d);
      const now = Date.now();
      if (error === undefined) {
        this.#store.recordAttempt(d.id, { status: 'delivered', deliveredAt: now });
        this.#options.log?.({ msg: 'webhook delivered', notificationId: d.notificationId, url: d.url, attempts: d.attempts + 1 });
      } else if (now - d.createdAt >= this.#options.maxAgeMs) {
        this.#store.recordAttempt(d.id, { status: 'failed', error });
        this.#options.log?.({ msg: 'webhook failed for good', notificationId: d.notificationId, url: d.url, error });
      } else {
        this.#store.recordAttempt(d.id, { status: 'pending', error, nextAttemptAt: now + backoffMs(d.attempts + 1) });
        this.#options.log?.({ msg: 'webhook attempt failed; will retry', notificationId: d.notificationId, url: d.url, error });
      }
    } finally {
      this.#inFlight.delete(d.id);
    }
  }

  /** One signed POST; returns undefined on 2xx, else a short reason. */
  async #send(d: DeliveryRecord): Promise<string | undefined> {
    const timestamp = new Date();
    const signature = this.#signer.sign(d.notificationId, timestamp, d.payload);
    try {
      const res = await request(d.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'esign-sandbox-webhooks',
          'webhook-id': d.notificationId,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: d.payload,
        headersTimeout: this.#options.requestTimeoutMs,
        bodyTimeout: this.#options.requestTimeoutMs,
      });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300 ? undefined : `HTTP ${res.statusCode}`;
    } catch (err) {
      return (err as { code?: string }).code ?? (err as Error).message;
    }
  }
}
