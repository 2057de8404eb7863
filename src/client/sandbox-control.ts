/**
 * The provider sandbox's control plane (`/_sandbox/*`, docs/sandbox.md) as the product knows it: the shapes it takes
 * and answers, and its client. The sandbox (packages/sandbox) implements these; the product never imports it.
 */
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { z } from 'zod';
import type { AuditEvent } from '../esign/evidence.js';
import type { TransactionRecord } from '../esign/schemas.js';

const rate = z.number().min(0).max(1).default(0);

/** Faults the sandbox injects on the spec's endpoints and webhooks. All off by default. */
export const FaultConfig = z.object({
  /** Fraction of API requests answered with 500/502/503. */
  error5xxRate: rate,
  /** Fraction of API requests whose connection is reset without a response. */
  resetRate: rate,
  /** Fraction of API requests carried out whose response is then lost (the connection drops). */
  lostResponseRate: rate,
  /** Fraction of API requests answered 429 with Retry-After. */
  rateLimitRate: rate,
  retryAfterSeconds: z.number().int().min(0).max(3600).default(1),
  /** Latency added to every API request, in ms. */
  latencyMs: z.number().int().min(0).max(60_000).default(0),
  /** Fraction of ZIP downloads cut off halfway (the declared Content-Length is not met). */
  truncateZipRate: rate,
  /** Fraction of webhook deliveries sent twice. */
  duplicateWebhookRate: rate,
  /** Fraction of webhooks never sent (recorded as dropped). */
  dropWebhookRate: rate,
  /** Seed for the fault decisions, so a run can be reproduced. */
  seed: z.number().int().default(1),
});
export type FaultConfig = z.infer<typeof FaultConfig>;
export type FaultConfigInput = z.input<typeof FaultConfig>;

/** A state a test can put a transaction in that signers and the spec's API cannot. */
export type ForcedEnd = 'cancelled' | 'expired' | 'deleted';

/** A webhook delivery as the sandbox's outbox records it. */
export interface DeliveryRecord {
  id: number;
  notificationId: string;
  url: string;
  payload: string;
  status: 'pending' | 'delivered' | 'failed' | 'dropped';
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** A sent message as the sandbox's outbox shows it: invitations and one-time codes. */
export interface MessageRecord {
  id: number;
  transactionId: string;
  participantId: string;
  channel: 'email' | 'sms';
  to: string;
  kind: 'invitation' | 'one-time-code';
  subject: string;
  body: string;
  sentAt: string;
}

export interface InspectedTransaction {
  record: TransactionRecord;
  zip: { bytes: number; sha256: string } | null;
  org: string;
}

/** The provider sandbox refused a control call: `status` and the problem's `detail`. */
export class SandboxControlError extends Error {
  override readonly name = 'SandboxControlError';
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * The client of the provider sandbox's test controls (`/_sandbox/*`,
 * docs/sandbox.md), shared by the demo, the CLI, benchmarks, the chaos run
 * and tests, so no tool builds those URLs by hand.
 */
export class SandboxControlClient {
  readonly baseUrl: string;
  readonly #dispatcher: Agent;
  readonly #authorization: Record<string, string>;

  /** `adminToken`: the sandbox's SANDBOX_ADMIN_TOKEN, needed unless it listens on loopback without one. */
  constructor(baseUrl: string, options: { ca?: string; adminToken?: string } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#dispatcher = new Agent(options.ca ? { connect: { ca: options.ca } } : {});
    this.#authorization = options.adminToken ? { authorization: `Bearer ${options.adminToken}` } : {};
  }

  /** A dev API token for an organization (the default one when omitted). */
  async issueToken(org?: string, ttlSeconds?: number): Promise<string> {
    const body = { ...(org ? { org } : {}), ...(ttlSeconds ? { ttlSeconds } : {}) };
    return (await this.#call<{ token: string }>('POST', '/tokens', body)).token;
  }

  /** Signs every tag of a participant, as if through the signing page; `values` maps "<docIndex>:<tagIndex>" to a value. */
  signAs(transactionId: string, participantId: string, values?: Record<string, string>): Promise<{ completed: boolean }> {
    const path = `/transactions/${encodeURIComponent(transactionId)}/participants/${encodeURIComponent(participantId)}/sign`;
    return this.#call('POST', path, values ? { values } : {});
  }

  /** Declines for a participant, as if through the signing page; the transaction ends `declined`. */
  declineAs(transactionId: string, participantId: string, reason?: string): Promise<{ declined: true }> {
    const path = `/transactions/${encodeURIComponent(transactionId)}/participants/${encodeURIComponent(participantId)}/decline`;
    return this.#call('POST', path, reason === undefined ? {} : { reason });
  }

  /** Ends a transaction at the provider as its own cancel, expiry or deletion would, with its webhook. */
  forceEnd(transactionId: string, status: ForcedEnd): Promise<TransactionRecord> {
    const action = { cancelled: 'cancel', expired: 'expire', deleted: 'delete' }[status];
    return this.#call('POST', `/transactions/${encodeURIComponent(transactionId)}/${action}`, {});
  }

  /** Completes a pending transaction with this ZIP (streamed, any size) and sends its webhooks. */
  completeWithZip(transactionId: string, zip: Buffer | Readable): Promise<TransactionRecord> {
    return this.#call('PUT', `/transactions/${encodeURIComponent(transactionId)}/completed-zip`, zip, 'application/zip');
  }

  /** Revokes the sandbox's sealing certificate (keyCompromise, now): every seal from then on is made with a revoked key. */
  revokeSeal(): Promise<{ serialNumber: string; at: string; reason: number }> {
    return this.#call('POST', '/pki/seal/revoke', {});
  }

  /** The transaction as the provider holds it (by id or esignId), or undefined. */
  async inspect(transactionId: string): Promise<InspectedTransaction | undefined> {
    try {
      return await this.#call<InspectedTransaction>('GET', `/transactions/${encodeURIComponent(transactionId)}`);
    } catch (err) {
      if (err instanceof SandboxControlError && err.status === 404) return undefined;
      throw err;
    }
  }

  async deliveries(filter: { transactionId?: string; notificationId?: string } = {}): Promise<DeliveryRecord[]> {
    const query = new URLSearchParams(Object.entries(filter).filter((e): e is [string, string] => e[1] !== undefined));
    return (await this.#call<{ data: DeliveryRecord[] }>('GET', `/webhooks/deliveries${query.size > 0 ? `?${query.toString()}` : ''}`))
      .data;
  }

  /** The outbox: invitations and one-time codes the sandbox "sent", newest first. */
  async outbox(filter: { to?: string; transactionId?: string } = {}): Promise<MessageRecord[]> {
    const query = new URLSearchParams(Object.entries(filter).filter((e): e is [string, string] => e[1] !== undefined));
    return (await this.#call<{ data: MessageRecord[] }>('GET', `/outbox${query.size > 0 ? `?${query.toString()}` : ''}`)).data;
  }

  /** A transaction's audit trail as recorded so far. */
  async auditTrail(transactionId: string): Promise<AuditEvent[]> {
    return (await this.#call<{ data: AuditEvent[] }>('GET', `/transactions/${encodeURIComponent(transactionId)}/audit-trail`)).data;
  }

  setFaults(config: FaultConfigInput): Promise<FaultConfig> {
    return this.#call('PUT', '/faults', config);
  }

  injectedFaults(): Promise<Record<string, number>> {
    return this.#call('GET', '/faults/injected');
  }

  stats(): Promise<{ uploads: number; transactions: number }> {
    return this.#call('GET', '/stats');
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  /** Writes always carry a body (`{}` at least): the sandbox refuses body-less ones, as a browser on another site sends them. */
  async #call<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const raw = contentType === 'application/json' ? (body === undefined ? undefined : JSON.stringify(body)) : (body as Buffer | Readable);
    const res = await request(`${this.baseUrl}/_sandbox${path}`, {
      method,
      dispatcher: this.#dispatcher,
      headers: { ...this.#authorization, ...(raw !== undefined ? { 'content-type': contentType } : {}) },
      ...(raw !== undefined ? { body: raw } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) {
      let detail = text;
      try {
        detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
      } catch {
        // not problem+json: keep the text
      }
      throw new SandboxControlError(res.statusCode, `${method} /_sandbox${path}: HTTP ${res.statusCode}: ${detail}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}
