import { randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { IframeStyle } from '../../../src/esign/schemas.js';

const API_AUDIENCE = 'esign-api';
const SIGNING_AUDIENCE = 'esign-signing-page';
const ISSUER = 'esign-sandbox';
export const DEFAULT_ORG = 'dev-org';

export class TokenError extends Error {
  override readonly name = 'TokenError';
  constructor(
    message: string,
    readonly expired: boolean,
  ) {
    super(message);
  }
}

const SigningClaims = z.object({
  sub: z.string(),
  jti: z.string(),
  pids: z.array(z.string()).min(1),
  style: IframeStyle.optional(),
  knd: z.enum(['link', 'session']).default('link'),
  rev: z.string().optional(),
});
/**
 * A signing address: a `link` is what /iframe-request hands out (short-lived,
 * opens the page once); a `session` is what the opened page uses for its calls.
 */
export type SigningClaims = {
  esignId: string;
  participantIds: string[];
  style: IframeStyle | undefined;
  /** A page session's: the transaction's revision (its `updatedAt`) when the page opened; an update ends the session. */
  revision?: string;
};
export type VerifiedSigningClaims = SigningClaims & { kind: 'link' | 'session'; jti: string };

/** HS256 tokens of the sandbox: API bearer tokens and signing-page addresses. */
export class SandboxTokens {
  readonly #key: Uint8Array;

  constructor(secret: string) {
    this.#key = new TextEncoder().encode(secret);
  }

  async issueApiToken(org = DEFAULT_ORG, ttlSeconds = 24 * 3600): Promise<string> {
    return new SignJWT({ org })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(API_AUDIENCE)
      .setSubject(`client@${org}`)
      .setIssuedAt()
      .setExpirationTime(`${ttlSeconds}s`)
      .sign(this.#key);
  }

  /**
   * Returns the organization of a valid API token. Any HS256 token signed with
   * the secret is accepted (so teams can mint their own), except signing-page
   * tokens, which must not double as API credentials.
   */
  async verifyApiToken(token: string): Promise<string> {
    const { payload } = await this.#verify(token);
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (aud.includes(SIGNING_AUDIENCE)) throw new TokenError('token invalid', false);
    return typeof payload.org === 'string' && payload.org.length > 0 ? payload.org : DEFAULT_ORG;
  }

  /** `jti` is given by a caller that keys state by it (a page session's passed authentication steps). */
  async issueSigningToken(
    claims: SigningClaims,
    ttlSeconds: number,
    kind: 'link' | 'session' = 'link',
    jti = randomUUID(),
  ): Promise<string> {
    return new SignJWT({
      pids: claims.participantIds,
      ...(claims.style ? { style: claims.style } : {}),
      knd: kind,
      ...(claims.revision ? { rev: claims.revision } : {}),
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setJti(jti)
      .setIssuer(ISSUER)
      .setAudience(SIGNING_AUDIENCE)
      .setSubject(claims.esignId)
      .setIssuedAt()
      .setExpirationTime(`${ttlSeconds}s`)
      .sign(this.#key);
  }

  async verifySigningToken(token: string): Promise<VerifiedSigningClaims> {
    const { payload } = await this.#verify(token, SIGNING_AUDIENCE);
    const parsed = SigningClaims.safeParse(payload);
    if (!parsed.success) throw new TokenError('malformed signing address', false);
    const d = parsed.data;
    return { esignId: d.sub, participantIds: d.pids, style: d.style, kind: d.knd, jti: d.jti, ...(d.rev ? { revision: d.rev } : {}) };
  }

  async #verify(token: string, audience?: string) {
    try {
      return await jwtVerify(token, this.#key, {
        algorithms: ['HS256'],
        ...(audience ? { issuer: ISSUER, audience } : {}),
      });
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw new TokenError('token expired', true);
      throw new TokenError('token invalid', false);
    }
  }
}
