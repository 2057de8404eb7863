/**
 * The worker's refusal of unencrypted payloads, as workflow code sees it: a
 * refused payload decodes to REFUSED_PLAINTEXT (src/codec/aes-gcm-codec.ts),
 * which validation recognises. Free of Node APIs: workflows import it.
 */
export const REFUSED_PLAINTEXT = { esignRefused: 'plaintext-payload' } as const;

export const PLAINTEXT_REFUSED_MESSAGE =
  'this payload arrived unencrypted, and the worker refuses plaintext: start, signal and update these workflows with the payload codec (docs/codec.md), or set ESIGN_CODEC_PLAINTEXT=allow on the worker during a migration';

export function isRefusedPlaintext(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && (value as { esignRefused?: unknown }).esignRefused === REFUSED_PLAINTEXT.esignRefused
  );
}
