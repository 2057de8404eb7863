// A backend verifies the orchestrator's events with the client package's EsignEventVerifier: what it returns is the
// body as signed, every field kept (`sequence` to order events and see a gap), and what is not an event is refused.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { expect, it } from 'vitest';
import { EsignEventRejected, EsignEventVerifier } from '../../src/client/events.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;

/** A body signed as the worker's event log signs it (Standard Webhooks). */
function signed(body: Record<string, unknown>, id = `msg_${randomBytes(8).toString('hex')}`) {
  const raw = JSON.stringify(body);
  const at = new Date();
  return {
    raw,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, raw),
    },
  };
}

it('keeps every field of the body: sequence, type, timestamp, data, and one added later', () => {
  const body = { type: 'participant.signed', sequence: 3, timestamp: new Date().toISOString(), data: { referenceId: 'r-1' }, schema: 2 };
  const { raw, headers } = signed(body, 'msg_one');
  expect(new EsignEventVerifier([secret]).verify(raw, headers)).toEqual({ ...body, id: 'msg_one' });
});

it('refuses a signed body whose sequence is missing or not a safe integer from 1, and one signed by another secret', () => {
  const verifier = new EsignEventVerifier(secret);
  // Past 2^53 a number loses precision: events could no longer be ordered nor a gap seen.
  for (const sequence of [undefined, null, 0, -1, 1.5, '2', 1e300, 2 ** 53 + 2]) {
    const { raw, headers } = signed({ type: 'participant.signed', sequence, timestamp: new Date().toISOString(), data: {} });
    expect(() => verifier.verify(raw, headers)).toThrow(EsignEventRejected);
  }
  const { raw, headers } = signed({ type: 'participant.signed', sequence: 1, timestamp: new Date().toISOString(), data: {} });
  expect(() => new EsignEventVerifier(`whsec_${randomBytes(24).toString('base64')}`).verify(raw, headers)).toThrow(EsignEventRejected);
});
