// One registry of provider events (src/esign/events.ts): what the senders build with it, the bridge's schema and
// the workflows' reading accept, and each kind carries what the registry says it does.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  endStatusOf,
  ESIGN_END_EVENTS,
  ESIGN_EVENTS,
  ESIGN_PARTICIPANT_EVENTS,
  notificationOf,
  PROVIDER_END_STATUSES,
  PROVIDER_EVENTS,
  type EsignEventName,
} from '../../src/esign/events.js';
import { EsignWebhook } from '../../src/esign/schemas.js';
import { readNotification } from '../../workflows/notification.js';

const ids = () => ({ notificationId: randomUUID(), esignId: randomUUID(), transactionId: randomUUID() });
const build = (event: EsignEventName) =>
  (ESIGN_PARTICIPANT_EVENTS as readonly string[]).includes(event)
    ? notificationOf(event as (typeof ESIGN_PARTICIPANT_EVENTS)[number], ids(), randomUUID())
    : notificationOf(event as (typeof ESIGN_END_EVENTS)[number], ids());

describe('provider events', () => {
  it('splits every event into ends and participant progress, each end into its provider status', () => {
    expect([...ESIGN_END_EVENTS, ...ESIGN_PARTICIPANT_EVENTS].sort()).toEqual([...ESIGN_EVENTS].sort());
    expect(ESIGN_END_EVENTS.map(endStatusOf).sort()).toEqual([...PROVIDER_END_STATUSES].sort());
    for (const e of ESIGN_END_EVENTS) expect(endStatusOf(e)).toBe(e.slice('esign-'.length));
  });

  it.each(Object.keys(PROVIDER_EVENTS) as EsignEventName[])('%s: built once, accepted by the bridge and the workflows alike', (event) => {
    const sent = build(event);
    expect(EsignWebhook.parse(sent)).toEqual(sent);
    expect(readNotification(JSON.parse(JSON.stringify(sent)))).toEqual(sent);
  });

  it('refuses a participant event that does not name its participant, in the schema and in the workflow', () => {
    const { data, ...rest } = build('esign-participant-signed') as { data: Record<string, string> };
    const { participant_id: _, ...without } = data;
    expect(EsignWebhook.safeParse({ ...rest, data: without }).success).toBe(false);
    expect(readNotification({ ...rest, data: without })).toBe('data.participant_id: expected a non-empty string');
  });

  it('keeps only the ids an event carries when a hand-sent signal adds others', () => {
    const sent = build('esign-declined');
    const read = readNotification({ ...sent, data: { ...sent.data, participant_id: 'p', note: 'x' } });
    expect(read).toEqual(sent);
  });
});
