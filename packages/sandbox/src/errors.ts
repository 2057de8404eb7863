import type { z } from 'zod';
import { issuesToProblemErrors } from '../../../src/util/zod-issues.js';

export type SandboxErrorKind =
  | 'bad_request'
  | 'validation'
  | 'not_found'
  | 'conflict'
  | 'too_large'
  | 'unauthorized'
  | 'forbidden'
  /** A signer locked out after too many failed authentication attempts. */
  | 'locked';

/** A typed failure of the provider sandbox's domain; the HTTP layer maps `kind` to a status. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';
  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    readonly errors?: { pointer: string; detail: string }[],
    /**
     * A stable reason code for the signing page (problem+json member `code`): what a page can act on, where the
     * status alone is ambiguous (a 409 is an ended transaction, a signer already done, or a signer out of turn).
     */
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Parses `value` with `schema`, or throws an error naming each field: a
 * `validation` error (422) for a body, a `bad_request` (400) for a query string.
 */
export function validated<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  kind: 'validation' | 'bad_request' = 'validation',
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const errors = issuesToProblemErrors(parsed.error);
    throw new SandboxError(kind, `${what} is invalid: ${errors.map((e) => e.detail).join('; ')}`, errors);
  }
  return parsed.data;
}
