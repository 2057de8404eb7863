/**
 * The e-signature provider as a small state machine, in memory: what the
 * explorer's activities call instead of HTTP, and what the explorer's checks
 * compare the workflow's outcome with. It keeps the rules of the provider
 * sandbox (packages/sandbox/src/api.ts) that the workflow depends on, and nothing else:
 *
 * - a transaction is `draft` or `esign_pending` until it ends (`completed`,
 *   `declined`, `cancelled`, `expired`, `deleted`); an ended one never changes;
 * - participants go pending -> viewed -> signed | declined; the last signature
 *   completes the transaction and makes its ZIP; a decline ends it;
 * - a replace (the workflow's update and its withdraw, a replace to `draft`)
 *   is refused with 409 once someone has signed or the transaction ended, and
 *   clears the signing state otherwise;
 * - creation is found again by referenceId and StoragePaths (the create
 *   activity's lookup after a lost response relies on the list).
 *
 * Every state change the world makes (a signature, a decline, the provider's
 * own end) yields the webhook the provider would send; the driver decides its
 * fate (delivered, duplicated, late, lost). Archive commits and the events
 * sent to the integrator are recorded here too, so the checks can count them.
 */
import { isParticipantEvent, notificationOf, type ParticipantStatus } from '../src/esign/events.js';
import { EsignApiError } from '../src/esign/errors.js';
import type { CreateTransactionRequest, EsignWebhook, TransactionRecord, UpdateTransactionRequest } from '../src/esign/schemas.js';
import type { IntegratorEvent } from '../src/definitions/transaction.js';

export type ModelStatus = 'draft' | 'esign_pending' | 'completed' | 'declined' | 'cancelled' | 'expired' | 'deleted';
export const ENDED: readonly ModelStatus[] = ['completed', 'declined', 'cancelled', 'expired', 'deleted'];

export interface ModelParticipant {
  id: string;
  status: ParticipantStatus;
  at?: string;
  reason?: string;
}

export interface ModelTransaction {
  id: string;
  esignId: string;
  referenceId: string | undefined;
  status: ModelStatus;
  body: CreateTransactionRequest;
  participants: ModelParticipant[];
  /** Made when it completes; `valid: false` models a ZIP the archive refuses (ArchiveInvalid) until an operator fixes it. */
  zip?: { sha256: string; valid: boolean };
  /** Whether anyone ever signed: a refused withdraw must have had a reason. */
  everSigned: boolean;
  /** Every status it went through, in order, with who moved it. */
  trail: { status: ModelStatus; by: string }[];
  /** Which transaction of the schedule created it (0: the first; a reused referenceId's later ones count on). */
  part: number;
  /** Deleted and then forgotten by the provider: every call naming it answers 404. */
  purged?: boolean;
}

/** The provider's endpoints an outage or a refusal can hit (the operation names of EsignApiError). */
export type ModelOperation = 'createTransaction' | 'getTransaction' | 'updateTransaction' | 'createIframeUrl' | 'listTransactions';

/**
 * A write the client gave up on (a `late` fault) whose effect has yet to reach the provider: it lands before the
 * `callsLeft`-th provider call from now, or when the client's give-up bound runs out, whichever comes first.
 */
export interface PendingEffect {
  /** The operation, and the activity attempt that sent it. */
  what: string;
  callsLeft: number;
  land: () => void;
}

/** One attempt at delivering an integrator event: what the explorer's endpoint answered. */
export interface DeliveryRecord {
  key: string;
  sequence: number;
  type: string;
  delivered: boolean;
  /** The activity this attempt ran in (a Temporal retry of a lost answer repeats it: the receiver deduplicates). */
  activity: string;
}

export interface ArchiveCommit {
  key: string;
  transactionId: string;
  sha256: string;
  /** The participants the workflow archived the transaction with (absent for a late completion). */
  participantIds?: string[];
}

export interface RecordedEvent {
  /** `attemptLoggedEvent` (the event log) or `recordCompletion` (a late completion). */
  via: string;
  type: string;
  key: string;
  /** When the workflow says it happened (its own clock); absent for outcomes. */
  occurredAt?: string;
  /** Its number in the transaction's event log. */
  sequence?: number;
  data: Record<string, unknown>;
}

/** Deterministic UUIDs: a run's ids are the same each time its schedule runs, and unique on a shared server. */
export function uuidFactory(seed: number, run: number): () => string {
  let n = 0;
  const hex = (value: number, width: number) => (value >>> 0).toString(16).padStart(width, '0').slice(-width);
  return () => {
    n++;
    // The run leads (explore/lane.ts routes a workflow's activities by it); the seed and a counter follow.
    return `${hex(run, 8)}-${hex(seed, 4)}-4${hex(n >>> 12, 3)}-8${hex(n, 3)}-${hex(n * 2654435761, 12)}`;
  };
}

const conflict = (operation: string, message: string) => new EsignApiError({ kind: 'http', status: 409, operation, message });
const notFound = (operation: string, id: string) =>
  new EsignApiError({ kind: 'http', status: 404, operation, message: `no transaction ${id}` });

export class ProviderModel {
  readonly transactions = new Map<string, ModelTransaction>();
  readonly archives: ArchiveCommit[] = [];
  readonly events: RecordedEvent[] = [];
  /** Planned activity faults that fired (a plan may name a call that never comes). */
  faultsHit = 0;
  /** Of those, the activity calls that took seconds (`slow` faults). */
  slowCalls = 0;
  /** The next ZIP made is one the archive refuses (set by the schedule; cleared by its "fix"). */
  badZips = false;
  /** Endpoints that answer with an HTTP status instead of working (503, 429: retryable; 4xx: final), until restored. */
  readonly down = new Map<ModelOperation, number>();
  /** The integrator's endpoint answers 503 while this is set. */
  endpointDown = false;
  /** Every attempt at an integrator event, in order. */
  readonly deliveries: DeliveryRecord[] = [];
  /** Archive attempts refused (ArchiveInvalid), by transaction id, in order. */
  readonly refusals: string[] = [];
  /** Every signing URL issued: of which transaction, its status then, and whether it had ever been sent (`esign_pending`) by then. */
  readonly signingUrls: { transactionId: string; status: ModelStatus; sentBefore: boolean }[] = [];
  /** Activity attempts whose next write is given up on and lands later (`late` faults): the calls it waits, by attempt. */
  readonly lateWrites = new Map<string, number>();
  /** Activity attempts whose call of this operation the provider refuses for good (`reject` faults: a 422), by attempt. */
  readonly rejects = new Map<string, ModelOperation>();
  /** Writes given up on, still on their way. */
  readonly pendingEffects: PendingEffect[] = [];
  /** Writes given up on that reached the provider later, in order (` refused` when the provider refused them then). */
  readonly landedLate: string[] = [];
  /** The schedule's transaction now running: what `create` records as its `part`. */
  part = 0;
  readonly #uuid: () => string;
  readonly #now: () => Date;
  #uploads = 0;
  #zips = 0;
  /** Called with each webhook the provider emits, in the order it emits them. */
  onWebhook: (notification: EsignWebhook) => void = () => {};

  constructor(options: { uuid: () => string; now?: () => Date }) {
    this.#uuid = options.uuid;
    this.#now = options.now ?? (() => new Date());
  }

  // ------------------------------------------------------ the provider's API

  upload(count: number): string[] {
    return Array.from({ length: count }, () => `${this.#uuid()}/document-${++this.#uploads}.pdf`);
  }

  create(body: CreateTransactionRequest): TransactionRecord {
    const t: ModelTransaction = {
      id: this.#uuid(),
      esignId: this.#uuid(),
      referenceId: body.referenceId,
      status: body.status === 'draft' ? 'draft' : 'esign_pending',
      body,
      participants: body.participants.map((p) => ({ id: p.id, status: 'pending' })),
      everSigned: false,
      trail: [],
      part: this.part,
    };
    t.trail.push({ status: t.status, by: 'create' });
    this.transactions.set(t.id, t);
    return this.#record(t);
  }

  get(id: string): TransactionRecord {
    const t = this.transactions.get(id);
    if (!t || t.purged) throw notFound('getTransaction', id);
    return this.#record(t);
  }

  list(limit: number, offset: number): { data: (TransactionRecord & { id: string })[]; total: number } {
    const all = [...this.transactions.values()].filter((t) => !t.purged).reverse(); // newest first, like the sandbox
    return { data: all.slice(offset, offset + limit).map((t) => this.#record(t) as TransactionRecord & { id: string }), total: all.length };
  }

  /**
   * The spec's update; `by` says who asked (the workflow's update, its withdraw, or someone outside). Once someone
   * signed it is a correction, as the sandbox takes one (packages/sandbox/src/corrections.ts): the documents and each
   * signed participant must come back unchanged (else 409), their signatures stay, and everyone else starts over.
   */
  replace(
    id: string,
    request: Pick<UpdateTransactionRequest, 'status'> & Partial<UpdateTransactionRequest>,
    by = 'replace',
  ): TransactionRecord {
    const t = this.transactions.get(id);
    if (!t || t.purged) throw notFound('updateTransaction', id);
    if (ENDED.includes(t.status)) throw conflict('updateTransaction', `transaction is ${t.status} and can no longer be changed`);
    const signed = t.participants.filter((p) => p.status === 'signed');
    const next = request.participants ?? t.body.participants;
    if (signed.length > 0) {
      if (request.status === 'draft')
        throw conflict('updateTransaction', 'a participant has already signed: the transaction cannot go back to draft');
      const documents = request.documents ?? t.body.documents;
      for (const s of signed) {
        const before = JSON.stringify(t.body.participants.find((p) => p.id === s.id));
        const after = next.find((p) => p.id === s.id);
        const tagsOf = (docs: typeof documents) => JSON.stringify(docs.map((d) => d.tags.filter((x) => x.signerId === s.id)));
        if (!after || JSON.stringify(after) !== before || tagsOf(documents) !== tagsOf(t.body.documents))
          throw conflict('updateTransaction', `a participant has already signed: participant ${s.id} cannot change`);
      }
      if (next.every((p) => signed.some((s) => s.id === p.id)))
        throw conflict('updateTransaction', 'a participant has already signed: nothing would be left to sign');
    }
    t.body = {
      ...t.body,
      ...(request.participants ? { participants: request.participants } : {}),
      ...(request.documents ? { documents: request.documents } : {}),
    };
    t.participants = next.map((p) => signed.find((s) => s.id === p.id) ?? { id: p.id, status: 'pending' });
    this.#move(t, request.status === 'draft' ? 'draft' : 'esign_pending', by);
    return this.#record(t);
  }

  signingUrl(esignId: string, participantIds: readonly string[]): string {
    const t = [...this.transactions.values()].find((x) => x.esignId === esignId);
    if (!t || t.purged)
      throw new EsignApiError({ kind: 'http', status: 404, operation: 'createIframeUrl', message: `no transaction ${esignId}` });
    const unknown = participantIds.filter((id) => !t.participants.some((p) => p.id === id));
    if (unknown.length > 0)
      throw new EsignApiError({ kind: 'http', status: 422, operation: 'createIframeUrl', message: `unknown ${unknown.join(', ')}` });
    this.signingUrls.push({ transactionId: t.id, status: t.status, sentBefore: t.trail.some((x) => x.status === 'esign_pending') });
    return `https://provider.invalid/sign/${esignId}/${participantIds.join(',')}`;
  }

  /** The completed ZIP: 409 until the transaction completed. */
  zip(id: string): { sha256: string; valid: boolean } {
    const t = this.transactions.get(id);
    if (!t || t.purged) throw notFound('downloadCompletedDocuments', id);
    if (t.status !== 'completed' || !t.zip)
      throw conflict('downloadCompletedDocuments', `transaction is ${t.status}; completed documents exist once it is completed`);
    return t.zip;
  }

  // ------------------------------------------------------- the world's moves

  /** A participant opens the signing page. Returns whether anything changed. */
  view(id: string, participant: number): boolean {
    const t = this.transactions.get(id);
    const p = t?.participants[participant];
    if (!t || !p || t.status !== 'esign_pending' || p.status !== 'pending') return false;
    p.status = 'viewed';
    p.at = this.#now().toISOString();
    this.#emit(t, 'esign-participant-viewed', p.id);
    return true;
  }

  /** A participant signs; the last signature completes the transaction. */
  sign(id: string, participant: number): boolean {
    const t = this.transactions.get(id);
    const p = t?.participants[participant];
    if (!t || !p || t.status !== 'esign_pending' || p.status === 'signed' || p.status === 'declined') return false;
    p.status = 'signed';
    p.at = this.#now().toISOString();
    t.everSigned = true;
    this.#emit(t, 'esign-participant-signed', p.id);
    if (t.participants.every((x) => x.status === 'signed')) {
      t.zip = { sha256: `${(++this.#zips).toString(16).padStart(8, '0')}${t.id.replace(/-/g, '')}`.slice(0, 64), valid: !this.badZips };
      this.#move(t, 'completed', 'signers');
      this.#emit(t, 'esign-completed');
    }
    return true;
  }

  /** The completion webhook of a completed transaction, sent once more (a new notification id, as a provider's resend has). */
  completionAgain(id: string): boolean {
    const t = this.transactions.get(id);
    if (!t || t.status !== 'completed') return false;
    this.#emit(t, 'esign-completed');
    return true;
  }

  decline(id: string, participant: number, reason = 'I do not agree'): boolean {
    const t = this.transactions.get(id);
    const p = t?.participants[participant];
    if (!t || !p || t.status !== 'esign_pending' || p.status === 'signed' || p.status === 'declined') return false;
    p.status = 'declined';
    p.at = this.#now().toISOString();
    p.reason = reason;
    this.#move(t, 'declined', 'signer');
    this.#emit(t, 'esign-declined');
    return true;
  }

  /** The provider ends the transaction itself (its own cancel, expiry or deletion). */
  forceEnd(id: string, status: 'cancelled' | 'expired' | 'deleted'): boolean {
    const t = this.transactions.get(id);
    if (!t || ENDED.includes(t.status)) return false;
    this.#move(t, status, 'provider');
    this.#emit(t, `esign-${status}`);
    return true;
  }

  /** The provider forgets a deleted transaction: from now on every call naming it answers 404. */
  purge(id: string): boolean {
    const t = this.transactions.get(id);
    if (!t || t.status !== 'deleted' || t.purged) return false;
    t.purged = true;
    return true;
  }

  // -------------------------------------------------- writes that land late

  /** A provider call arrives: each write still on its way comes one call nearer, and those due land first. */
  arrive(): void {
    for (const pending of [...this.pendingEffects]) if (--pending.callsLeft <= 0) this.landLate(pending);
  }

  /** A write given up on reaches the provider now (once; what the provider refuses then changes nothing). */
  landLate(pending: PendingEffect): void {
    const i = this.pendingEffects.indexOf(pending);
    if (i < 0) return;
    this.pendingEffects.splice(i, 1);
    try {
      pending.land();
      this.landedLate.push(pending.what);
    } catch {
      this.landedLate.push(`${pending.what} refused`);
    }
  }

  /** Throws what an endpoint that is down (or refusing) answers, if it is. */
  refuse(operation: ModelOperation): void {
    const status = this.down.get(operation);
    if (status === undefined) return;
    throw new EsignApiError({ kind: 'http', status, operation, message: `explorer: the provider answers ${status}` });
  }

  /** An operator repairs what made the archive refuse the ZIP (the explorer's stand-in for fixing the cause). */
  fixZips(): void {
    this.badZips = false;
    for (const t of this.transactions.values()) if (t.zip) t.zip.valid = true;
  }

  // ------------------------------------------------------------ bookkeeping

  byReference(referenceId: string): ModelTransaction[] {
    return [...this.transactions.values()].filter((t) => t.referenceId === referenceId);
  }

  recordEvent(via: string, event: Pick<IntegratorEvent, 'type' | 'key' | 'data'> & { occurredAt?: string; sequence?: number }): void {
    this.events.push({
      via,
      type: event.type,
      key: event.key,
      ...(event.occurredAt ? { occurredAt: event.occurredAt } : {}),
      ...(event.sequence !== undefined ? { sequence: event.sequence } : {}),
      data: event.data,
    });
  }

  #move(t: ModelTransaction, status: ModelStatus, by: string): void {
    t.status = status;
    t.trail.push({ status, by });
  }

  #emit(t: ModelTransaction, event: EsignWebhook['event'], participantId?: string): void {
    const ids = { notificationId: this.#uuid(), esignId: t.esignId, transactionId: t.id };
    if (isParticipantEvent(event) && !participantId) throw new Error(`${event} names its participant`);
    this.onWebhook(isParticipantEvent(event) ? notificationOf(event, ids, participantId!) : notificationOf(event, ids));
  }

  #record(t: ModelTransaction): TransactionRecord {
    return {
      id: t.id,
      esignId: t.esignId,
      status: t.status,
      ...(t.referenceId ? { referenceId: t.referenceId } : {}),
      documents: t.body.documents.map((d) => ({ title: d.title, StoragePath: d.StoragePath, tags: d.tags })),
      participants: t.participants.map((p) => ({
        id: p.id,
        status: p.status,
        ...(p.status === 'signed' && p.at ? { signedAt: p.at } : {}),
        ...(p.status === 'declined' && p.at ? { declinedAt: p.at, ...(p.reason ? { declineReason: p.reason } : {}) } : {}),
        ...(p.status === 'viewed' && p.at ? { viewedAt: p.at } : {}),
      })),
    };
  }
}
