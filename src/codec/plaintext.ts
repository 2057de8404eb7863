/**
 * The worker's refusal of unencrypted payloads, as workflow code sees it: a
 * refused payload decodes to REFUSED_PLAINTEXT (src/codec/aes-gcm-codec.ts),
 * which validation recognises. Free of Node APIs: workflows import it.
 */
export const REFUSED_PLAINTEXT = { esignRefused: 'plaintext-payload' } as const;

// Defined beside the failure converter, which keeps it in clear and may import nothing of ours (it is loaded by path).
export { PLAINTEXT_REFUSED_MESSAGE } from './failure-converter.js';

export function isRefusedPlaintext(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && (value as { esignRefused?: unknown }).esignRefused === REFUSED_PLAINTEXT.esignRefused
  );
}
