import type { TransactionRecord } from '../../../src/esign/schemas.js';
import { isProviderEndStatus } from '../../../src/esign/events.js';
import type { CompletionPipeline } from './completion.js';
import type { EventOutbox } from './outbox.js';
import { SandboxError } from './errors.js';
import { toRecord } from './records.js';
import type { SigningSessions } from './signing.js';
import type { AuditEvent } from '../../../src/esign/evidence.js';
import type { DeliveryRecord, ForcedEnd, MessageRecord } from '../../../src/client/sandbox-control.js';
import type { SandboxStore } from './store.js';

/**
 * The provider sandbox's test controls (`/_sandbox/*`): what a test, the
 * demo, a benchmark or the chaos run does to the provider that its API
 * does not offer, and what it reads back to check the outcome. Across
 * organizations by design.
 */
export class SandboxControls {
  readonly #store: SandboxStore;
  readonly #signing: SigningSessions;
  readonly #completion: CompletionPipeline;
  readonly #outbox: EventOutbox;
  readonly #now: () => Date;

  constructor(store: SandboxStore, signing: SigningSessions, completion: CompletionPipeline, outbox: EventOutbox, now: () => Date) {
    this.#store = store;
    this.#signing = signing;
    this.#completion = completion;
    this.#outbox = outbox;
    this.#now = now;
  }

  /** Signs every tag of a participant, as if through the signing page. */
  signAs(id: string, participantId: string, values: Record<string, string> = {}): Promise<{ completed: boolean }> {
    return this.#signing.signAs(id, participantId, values);
  }

  /** Declines for a participant, as if through the signing page. */
  declineAs(id: string, participantId: string, reason?: string): { declined: true } {
    return this.#signing.declineAs(id, participantId, reason);
  }

  /** Completes a pending transaction with a ZIP supplied from outside (benchmarks need ZIPs of any size), then notifies. */
  async completeWithZip(id: string, zipTempPath: string, zip: { bytes: number; sha256: string }): Promise<TransactionRecord> {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    if (t.status !== 'esign_pending') throw new SandboxError('conflict', `transaction is ${t.status}`);
    await this.#completion.completeWithZip(t, zipTempPath, zip);
    return toRecord(this.#store, this.#store.getTransaction(id)!);
  }

  /**
   * Cancels, expires or deletes a transaction as the provider itself would,
   * with its webhook (`esign-cancelled`, …). A transaction that has ended
   * (completed, declined, or already in that state) cannot be moved.
   */
  forceEnd(id: string, status: ForcedEnd): TransactionRecord {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    if (isProviderEndStatus(t.status)) throw new SandboxError('conflict', `transaction is already ${t.status}`);
    this.#outbox.publish(t, `esign-${status}`, () => this.#store.updateTransaction(id, { status, updatedAt: this.#now().toISOString() }));
    return toRecord(this.#store, this.#store.getTransaction(id)!);
  }

  /** The raw transaction, by id or esignId, with its ZIP's size and hash once completed. */
  inspect(id: string): { record: TransactionRecord; zip: { bytes: number; sha256: string } | null; org: string } | undefined {
    const t = this.#store.getTransaction(id) ?? this.#store.getTransactionByEsignId(id);
    if (!t) return undefined;
    return {
      record: toRecord(this.#store, t),
      zip: t.zipBytes !== null && t.zipSha256 !== null ? { bytes: t.zipBytes, sha256: t.zipSha256 } : null,
      org: t.org,
    };
  }

  /** Totals, e.g. to prove a refused request reached nothing. */
  stats(): { uploads: number; transactions: number } {
    return this.#store.counts();
  }

  /** The sandbox's outbox: invitations and one-time codes it "sent", newest first. */
  outbox(filter: { to?: string; transactionId?: string }): MessageRecord[] {
    return this.#store.evidence.messages(filter);
  }

  /** A transaction's audit trail so far (the completed ZIP carries it too). */
  auditTrail(id: string): AuditEvent[] {
    const t = this.#store.getTransaction(id) ?? this.#store.getTransactionByEsignId(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    return this.#store.evidence.auditTrail(t.id);
  }

  /** Webhook deliveries as recorded, for one notification, one transaction, or the latest 500. */
  deliveries(filter: { notificationId?: string; transactionId?: string }): DeliveryRecord[] {
    return this.#store.listDeliveries(filter);
  }
}
