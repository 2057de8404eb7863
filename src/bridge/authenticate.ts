import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export type AuthMode =
  | { kind: 'standard-webhooks'; secrets: string[]; toleranceSeconds: number }
  | { kind: 'shared-secret'; header: string; secret: string }
  | { kind: 'insecure-dev' };

export class AuthenticationError extends Error {
  override readonly name = 'AuthenticationError';
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
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
    const given = header(headers, mode.header);
    if (!given || !safeEqual(given, mode.secret)) throw new AuthenticationError(`missing or wrong ${mode.header} header`);
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
    .map((s) => s.slice(3));
  if (offered.length === 0) throw new AuthenticationError('no v1 signature');
  const body = rawBody.toString('utf8');
  for (const secret of mode.secrets) {
    const expected = new Webhook(secret).sign(id, new Date(seconds * 1000), body).slice(3);
    if (offered.some((sig) => safeEqual(sig, expected))) return;
  }
  throw new AuthenticationError('signature does not match');
}
