import { createHash, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export type AuthMode =
  | { kind: 'standard-webhooks'; secrets: string[]; toleranceSeconds: number }
  | { kind: 'shared-secret'; header: string; secret: string }
  | { kind: 'insecure-dev' };

/**
 * Why a request was not authenticated. The message is for the bridge's own log
 * only: every failure is answered with the same 401 (`UNAUTHENTICATED_DETAIL`),
 * so a caller never learns which check it failed.
 */
export class AuthenticationError extends Error {
  override readonly name = 'AuthenticationError';
}

/** The one answer to every authentication failure. */
export const UNAUTHENTICATED_DETAIL = 'the request is not authenticated';

/**
 * Constant-time equality that does not leak the length either: both sides are
 * hashed first, so the comparison always runs over 32 bytes.
 */
export function safeEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

const header = (headers: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Checks that a webhook comes from the provider. Standard Webhooks: the HMAC
 * (computed by the standardwebhooks library) over `id.timestamp.body` must
 * match one of the `v1,` signatures for one of the configured secrets (several
 * during a rotation), compared in constant time, and the timestamp must be
 * within the tolerance, against replays. Error messages never echo a secret
 * or a signature.
 */
export function authenticate(
  mode: AuthMode,
  headers: Record<string, string | string[] | undefined>,
  rawBody: Buffer,
  now = Date.now(),
): void {
  if (mode.kind === 'insecure-dev') return;
  if (mode.kind === 'shared-secret') {
    const given = header(headers, mode.header) ?? '';
    if (!safeEqual(given, mode.secret)) throw new AuthenticationError(`missing or wrong ${mode.header} header`);
    return;
  }
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new AuthenticationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  if (!/^\d{1,12}$/.test(timestamp)) throw new AuthenticationError('webhook-timestamp is not a Unix time in seconds');
  const seconds = Number(timestamp);
  if (Math.abs(now / 1000 - seconds) > mode.toleranceSeconds)
    throw new AuthenticationError('webhook-timestamp is outside the tolerance (stale or replayed)');
  const offered = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => s.slice(3))
    .slice(0, 8); // a rotation needs two; a header with hundreds is not worth an HMAC each
  if (offered.length === 0) throw new AuthenticationError('no v1 signature');
  const body = rawBody.toString('utf8');
  // Every secret is tried against every offered signature, whichever matches: the time taken does not say which.
  let matched = false;
  for (const secret of mode.secrets) {
    const expected = new Webhook(secret).sign(id, new Date(seconds * 1000), body).slice(3);
    for (const sig of offered) matched = safeEqual(sig, expected) || matched;
  }
  if (!matched) throw new AuthenticationError('signature does not match');
}
