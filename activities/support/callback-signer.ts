import { Webhook } from 'standardwebhooks';

/**
 * Signs the events the orchestrator sends to the integrator's backend per
 * Standard Webhooks, with the integrator's own `whsec_` secrets: with each of
 * them during a rotation, so a receiver holding either one verifies
 * (docs/integrator-events.md). Secrets never leave this object.
 */
export class CallbackSigner {
  readonly #signers: Webhook[];

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('CallbackSigner needs at least one whsec_ secret');
    for (const s of secrets) if (!/^whsec_[A-Za-z0-9+/=]+$/.test(s)) throw new Error('callback secrets must be whsec_ secrets');
    this.#signers = secrets.map((s) => new Webhook(s));
  }

  /** The headers of one delivery attempt: the id stays, the timestamp is the attempt's. */
  headers(id: string, body: string, at = new Date()): Record<string, string> {
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': this.#signers.map((w) => w.sign(id, at, body)).join(' '),
    };
  }
}

export { eventId } from '../../src/util/event-id.js';
