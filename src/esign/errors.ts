import { isRetryableStatus } from '../failures.js';
import type { ProblemDetails } from './schemas.js';

/**
 * Why a provider call failed, classified for Temporal's retry policy:
 * - network, timeout: the request may not have reached the provider; retry.
 * - http: the provider answered; 408, 429 and 5xx are retryable, other 4xx not.
 * - invalid_response: the provider answered something outside the contract; not retryable.
 * - invalid_request: refused before sending (our input broke the contract); not retryable.
 */
export type EsignErrorKind = 'network' | 'timeout' | 'http' | 'invalid_response' | 'invalid_request';

export interface EsignApiErrorInit {
  kind: EsignErrorKind;
  operation: string;
  message: string;
  status?: number;
  retryAfterMs?: number;
  problem?: ProblemDetails;
  /** A transport failure before the connection was made: the request never left. */
  unsent?: boolean;
  cause?: unknown;
}

export class EsignApiError extends Error {
  override readonly name = 'EsignApiError';
  readonly kind: EsignErrorKind;
  readonly operation: string;
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** Delay the provider asked for (Retry-After), to become the next retry's delay. */
  readonly retryAfterMs: number | undefined;
  readonly problem: ProblemDetails | undefined;
  /** The request never left (no connection was made), so nothing of it can reach the provider later. */
  readonly unsent: boolean;

  constructor(init: EsignApiErrorInit) {
    super(`${init.operation}: ${init.message}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.kind = init.kind;
    this.operation = init.operation;
    this.status = init.status;
    this.retryAfterMs = init.retryAfterMs;
    this.problem = init.problem;
    this.unsent = init.unsent ?? false;
    this.retryable = isRetryable(init.kind, init.status);
  }
}

function isRetryable(kind: EsignErrorKind, status: number | undefined): boolean {
  switch (kind) {
    case 'network':
    case 'timeout':
      return true;
    case 'http':
      return status !== undefined && isRetryableStatus(status);
    default:
      return false;
  }
}

/** Parses `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 10.2.3); capped at one hour. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const trimmed = raw.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now);
  }
  return Math.min(ms, 3_600_000);
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/** Transport failures that come before a connection is made: the request never left. */
const UNSENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a transport failure came before the request could leave (anything unknown may have sent it). */
export function neverSent(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNSENT_CODES.has(code);
}

/** Classifies a transport failure; anything unknown is treated as a network error (retryable). */
export function classifyTransportError(err: unknown): 'network' | 'timeout' {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return 'timeout';
  if ((err as { name?: unknown } | null)?.name === 'TimeoutError') return 'timeout';
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'network';
  return 'network';
}

/** Removes every occurrence of each secret from a text that may be shown to people. */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  // Bearer tokens that are not ours (e.g. echoed by a proxy) are redacted too.
  return out.replace(/(Bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi, '$1[REDACTED]');
}
