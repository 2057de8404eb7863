/**
 * A backend's side of the events the orchestrator POSTs to a transaction's `callbackUrl`
 * (docs/integrator-events.md): each verified as a receiver must, the Standard Webhooks signature over the exact
 * bytes received, by any of the integrator's `whsec_` secrets (more than one during a rotation), within the
 * library's five minutes of its timestamp. Deduplicate by `id` (the `webhook-id`, the same for every delivery of
 * one event).
 */
import { Webhook } from 'standardwebhooks';
import type { IntegratorEventBody } from '../definitions/transaction.js';

/** An event whose signature held: its body, and its `webhook-id` to deduplicate by. */
export interface VerifiedEsignEvent extends IntegratorEventBody {
  id: string;
}

/** A request that is not a genuine event: answer it 401 (the orchestrator does not retry a 4xx). */
export class EsignEventRejected extends Error {
  override readonly name = 'EsignEventRejected';
}

export class EsignEventVerifier {
  readonly #verifiers: Webhook[];

  /** The integrator's `whsec_…` secrets, as the worker's ESIGN_CALLBACK_SECRETS holds them (comma-separated works too). */
  constructor(secrets: string | readonly string[]) {
    const list = (typeof secrets === 'string' ? secrets.split(',') : secrets).map((s) => s.trim()).filter((s) => s !== '');
    if (list.length === 0) throw new Error('EsignEventVerifier needs at least one whsec_ secret');
    for (const s of list) if (!s.startsWith('whsec_')) throw new Error('callback secrets are whsec_ secrets');
    this.#verifiers = list.map((s) => new Webhook(s));
  }

  /**
   * The event, when one of the secrets signed exactly `body` (the raw bytes, before any JSON parsing) with these
   * headers; throws EsignEventRejected otherwise.
   */
  verify(body: string | Buffer, headers: Readonly<Record<string, string | readonly string[] | undefined>>): VerifiedEsignEvent {
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      const first = typeof value === 'string' ? value : value?.[0];
      if (first !== undefined) flat[name.toLowerCase()] = first;
    }
    const id = flat['webhook-id'];
    if (!id) throw new EsignEventRejected('no webhook-id header: not an event from the orchestrator');
    let last: unknown;
    for (const verifier of this.#verifiers) {
      let payload: unknown;
      try {
        payload = verifier.verify(body, flat);
      } catch (err) {
        last = err;
        continue;
      }
      const event = payload as Partial<IntegratorEventBody> | null;
      if (typeof event?.type !== 'string' || typeof event.timestamp !== 'string' || typeof event.data !== 'object' || event.data === null)
        throw new EsignEventRejected(`event ${id} is signed but is not {type, timestamp, data}`);
      // A safe integer: past 2^53 numbers lose precision, and events could no longer be ordered or a gap seen.
      if (!(Number.isSafeInteger(event.sequence) && event.sequence! >= 1))
        throw new EsignEventRejected(`event ${id} is signed but its sequence is not a number from 1`);
      // Every field of the body as signed (`sequence` to order by and see a gap, and any added later), then its id.
      return { ...(event as IntegratorEventBody), id };
    }
    throw new EsignEventRejected(`event ${id} does not verify with any of the ${this.#verifiers.length} secrets`, { cause: last });
  }
}
