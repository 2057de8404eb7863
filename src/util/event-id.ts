import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/**
 * The stable `webhook-id` of an integrator event: the same for every attempt, retry, replay and redelivery, so a
 * receiver deduplicates by it. Pure JavaScript (no node:crypto), so the event log's workflow computes the same id
 * the delivering activity sends.
 */
export function eventId(key: string): string {
  return `evt_${bytesToHex(sha256(utf8ToBytes(key))).slice(0, 32)}`;
}
