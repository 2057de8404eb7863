import { randomUUID } from 'node:crypto';
import type { IframeStyle } from '../../../src/esign/schemas.js';
import { ESIGN_DECLINED_EVENT, ESIGN_PARTICIPANT_SIGNED_EVENT, ESIGN_PARTICIPANT_VIEWED_EVENT } from '../../../src/esign/events.js';
import type { AuthenticationStep, ClientInfo, SignerAuthentication } from './authentication.js';
import type { CompletionPipeline } from './completion.js';
import type { SandboxMailer } from './mailer.js';
import { SKIP, type EventOutbox } from './outbox.js';
import { SandboxError } from './errors.js';
import { nextSigner } from './records.js';
import { signingView, type SigningView } from './signing-view.js';

export type { SigningTagView, SigningView } from './signing-view.js';
import type { SandboxStore, TransactionRow } from './store.js';
import { appliedStyle } from './style.js';
import { defaultTagValue, isRequired } from './tag-values.js';
import { TokenError, type SandboxTokens } from './tokens.js';

/** Why a signing page cannot be shown (spec section 7). */
export type SigningRefusal =
  | 'link_invalid'
  | 'link_expired'
  | 'link_used'
  | 'not_found'
  | 'participant_mismatch'
  | 'completed'
  | 'declined'
  | 'cancelled'
  | 'expired'
  | 'not_sent';

/**
 * Signing sessions in the provider sandbox: a signing address (a short-lived
 * token from the iframe request) opens a page showing the participant's
 * tags; the signer applies them and finishes. The page, its documents and
 * its actions all open the address the same way, so they refuse the same things.
 */
export class SigningSessions {
  readonly #store: SandboxStore;
  readonly #tokens: SandboxTokens;
  readonly #completion: CompletionPipeline;
  readonly #outbox: EventOutbox;
  readonly #auth: SignerAuthentication;
  readonly #mailer: SandboxMailer;
  readonly #options: { now: () => Date; sessionTtlSeconds: number };

  constructor(
    store: SandboxStore,
    tokens: SandboxTokens,
    completion: CompletionPipeline,
    outbox: EventOutbox,
    deps: { auth: SignerAuthentication; mailer: SandboxMailer },
    options: { now: () => Date; sessionTtlSeconds: number },
  ) {
    this.#store = store;
    this.#tokens = tokens;
    this.#completion = completion;
    this.#outbox = outbox;
    this.#auth = deps.auth;
    this.#mailer = deps.mailer;
    this.#options = options;
  }

  /**
   * Opens a signing address: its transaction and claims, or why it cannot be
   * used (spec section 7). The page, its documents and its actions all go
   * through here, so they refuse the same things.
   */
  async #openAddress(
    token: string,
    use: 'page' | 'session' = 'session',
  ): Promise<
    { t: TransactionRow; participantIds: string[]; style: IframeStyle; session: string } | { refusal: SigningRefusal; style: IframeStyle }
  > {
    let claims;
    try {
      claims = await this.#tokens.verifySigningToken(token);
    } catch (err) {
      if (err instanceof TokenError) return { refusal: err.expired ? 'link_expired' : 'link_invalid', style: {} };
      throw err;
    }
    // A link opens the page; only the page's own session token may act (docs/spec-gaps.md, row 38).
    if (claims.kind !== (use === 'page' ? 'link' : 'session')) return { refusal: 'link_invalid', style: {} };
    const style = appliedStyle(claims.style);
    const t = this.#store.getTransactionByEsignId(claims.esignId);
    if (!t || t.status === 'deleted') return { refusal: 'not_found', style };
    const refusal = statusRefusal(t.status);
    if (refusal) return { refusal, style };
    const known = new Set(t.body.participants.map((p) => p.id));
    if (claims.participantIds.some((pid) => !known.has(pid))) return { refusal: 'participant_mismatch', style };
    // A page opened before an update (a correction) shows tags that may have moved: it opens again from its link.
    if (claims.kind === 'session' && claims.revision !== undefined && claims.revision !== t.updatedAt)
      return { refusal: 'link_expired', style };
    // Used up last, so a link to an ended transaction still says why it cannot be signed.
    if (use === 'page' && !this.#store.useSigningLink(claims.jti, this.#options.now().toISOString()))
      return { refusal: 'link_used', style };
    return { t, participantIds: claims.participantIds, style, session: claims.jti };
  }

  /** Resolves a signing address to what its page shows, or to why it cannot be shown. */
  async view(token: string): Promise<SigningView | { refusal: SigningRefusal; style: IframeStyle }> {
    const opened = await this.#openAddress(token);
    return 'refusal' in opened ? opened : this.#view(opened.t, opened.participantIds, opened.style, opened.session);
  }

  /**
   * The page itself, from a single-use link: the link is used up, and the
   * page gets a session token for its own calls. A participant's first look
   * is recorded (`esign-participant-viewed`).
   */
  async open(
    token: string,
    client: ClientInfo = {},
  ): Promise<(SigningView & { session: string }) | { refusal: SigningRefusal; style: IframeStyle }> {
    const opened = await this.#openAddress(token, 'page');
    if ('refusal' in opened) return opened;
    const at = this.#options.now().toISOString();
    const finished = this.#store.finishedParticipants(opened.t.id);
    for (const pid of opened.participantIds) {
      if (finished.has(pid)) continue;
      this.#outbox.publish(
        opened.t,
        ESIGN_PARTICIPANT_VIEWED_EVENT,
        () => {
          this.#store.evidence.audit(opened.t.id, { at, type: 'viewed', participantId: pid, ...client });
          return this.#store.markViewed(opened.t.id, pid, at) ? undefined : SKIP;
        },
        pid,
      );
    }
    const jti = randomUUID();
    const session = await this.#tokens.issueSigningToken(
      { esignId: opened.t.esignId, participantIds: opened.participantIds, style: opened.style, revision: opened.t.updatedAt },
      this.#options.sessionTtlSeconds,
      'session',
      jti,
    );
    // A two-factor step starts with a code on its way.
    for (const pid of opened.participantIds) {
      if (finished.has(pid)) continue;
      const next = this.#auth.next(opened.t, pid, jti);
      if (next?.step === 'two-factor-authentication' && !next.lockedUntil) this.#auth.sendCode(opened.t, pid, client);
    }
    return { ...this.#view(opened.t, opened.participantIds, opened.style, jti), session };
  }

  /** Answers the next authentication step of a participant on this page. */
  async authenticate(
    token: string,
    participantId: string,
    step: AuthenticationStep,
    answer: string,
    client: ClientInfo = {},
  ): Promise<void> {
    const { t, session } = await this.#actingFor(token, participantId);
    this.#auth.submit(t, participantId, session, step, answer, client);
  }

  /** Sends a new one-time code to a two-factor participant of this page. */
  async sendCode(token: string, participantId: string, client: ClientInfo = {}): Promise<void> {
    const { t } = await this.#actingFor(token, participantId);
    this.#auth.sendCode(t, participantId, client);
  }

  #view(t: TransactionRow, participantIds: readonly string[], style: IframeStyle, session: string): SigningView {
    const finished = this.#store.finishedParticipants(t.id);
    const authentication = participantIds
      .filter((pid) => !finished.has(pid))
      .map((pid) => this.#auth.next(t, pid, session))
      .filter((a) => a !== undefined);
    return signingView(this.#store, t, { participantIds, style, authentication, now: this.#options.now() });
  }

  /** The original PDF of one document, for a signing page that may still be used. */
  async documentForSigning(token: string, docIndex: number): Promise<string> {
    const opened = await this.#openAddress(token);
    if ('refusal' in opened) throw new SandboxError('forbidden', `signing page unavailable: ${opened.refusal}`);
    const finished = this.#store.finishedParticipants(opened.t.id);
    for (const pid of opened.participantIds) if (!finished.has(pid)) this.#auth.require(opened.t, pid, opened.session);
    const doc = Number.isInteger(docIndex) ? opened.t.body.documents[docIndex] : undefined;
    if (!doc) throw new SandboxError('not_found', 'no such document');
    return this.#store.uploadPath(doc.StoragePath);
  }

  /** Applies one tag from a signing page. */
  async applyTag(
    token: string,
    participantId: string,
    docIndex: number,
    tagIndex: number,
    value: string,
    client: ClientInfo = {},
  ): Promise<void> {
    const t = await this.#signable(token, participantId);
    const tag = t.body.documents[docIndex]?.tags[tagIndex];
    if (!tag || tag.signerId !== participantId) throw new SandboxError('not_found', 'no such tag for this participant');
    if (value.trim() === '' || value.length > 500) throw new SandboxError('validation', 'value must be 1 to 500 characters');
    const at = this.#options.now().toISOString();
    this.#store.transaction(() => {
      this.#store.applyTag({ transactionId: t.id, docIndex, tagIndex, participantId, value, appliedAt: at });
      this.#store.evidence.audit(t.id, {
        at,
        type: 'tag_applied',
        participantId,
        detail: { document: docIndex, tag: tagIndex, type: tag.type },
        ...client,
      });
    });
  }

  /** Finishes a participant from a signing page; returns whether the transaction is now completed. */
  async finish(token: string, participantId: string, client: ClientInfo = {}): Promise<{ completed: boolean }> {
    const t = await this.#signable(token, participantId);
    return this.#finishParticipant(t, participantId, {}, false, client);
  }

  /** Signs every tag of a participant with default (or given) values, without a browser (the test controls' signAs). */
  async signAs(id: string, participantId: string, values: Record<string, string> = {}): Promise<{ completed: boolean }> {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    this.#checkSignable(t, participantId);
    return this.#finishParticipant(t, participantId, values, true, { userAgent: 'sandbox test controls (signAs)' });
  }

  /** Declines for a participant from a signing page: the transaction ends `declined` and its webhook is queued. */
  async decline(token: string, participantId: string, reason: string | undefined, client: ClientInfo = {}): Promise<{ declined: true }> {
    const { t, session } = await this.#actingFor(token, participantId);
    // Declining is an act of the signer, too: only once they have shown who they are.
    this.#auth.require(t, participantId, session);
    return this.#decline(t, participantId, reason, client);
  }

  /** Declines for a participant without a browser (the test controls' declineAs). */
  declineAs(id: string, participantId: string, reason: string | undefined): { declined: true } {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    return this.#decline(t, participantId, reason, { userAgent: 'sandbox test controls (declineAs)' });
  }

  #decline(t: TransactionRow, participantId: string, reason: string | undefined, client: ClientInfo): { declined: true } {
    // A signer may decline out of turn: refusing does not wait for the others.
    if (t.status !== 'esign_pending') throw new SandboxError('conflict', `transaction is ${t.status}`);
    if (!t.body.participants.some((p) => p.id === participantId)) {
      throw new SandboxError('not_found', `participant ${participantId} is not in this transaction`);
    }
    if (this.#store.finishedParticipants(t.id).has(participantId)) {
      throw new SandboxError('conflict', 'this participant has already signed');
    }
    const why = reason?.trim().slice(0, 500) || undefined;
    const at = this.#options.now().toISOString();
    this.#outbox.publish(t, ESIGN_DECLINED_EVENT, () => {
      this.#store.declineParticipant(t.id, participantId, why, at);
      this.#store.evidence.audit(t.id, { at, type: 'declined', participantId, ...(why ? { detail: { reason: why } } : {}), ...client });
      this.#store.updateTransaction(t.id, { status: 'declined', updatedAt: at });
    });
    return { declined: true };
  }

  async #signable(token: string, participantId: string): Promise<TransactionRow> {
    const { t, session } = await this.#actingFor(token, participantId);
    this.#checkSignable(t, participantId);
    this.#auth.require(t, participantId, session);
    return t;
  }

  /** The transaction a page's session may act on for this participant, or the error that says why not. */
  async #actingFor(token: string, participantId: string): Promise<{ t: TransactionRow; session: string }> {
    const opened = await this.#openAddress(token);
    if ('refusal' in opened) {
      const expiredOrInvalid = opened.refusal === 'link_invalid' || opened.refusal === 'link_expired';
      throw new SandboxError(
        expiredOrInvalid ? 'unauthorized' : 'conflict',
        `signing address unusable: ${opened.refusal}`,
        undefined,
        opened.refusal,
      );
    }
    if (!opened.participantIds.includes(participantId))
      throw new SandboxError('forbidden', 'this address was not issued for that participant', undefined, 'participant_mismatch');
    return { t: opened.t, session: opened.session };
  }

  #checkSignable(t: TransactionRow, participantId: string): void {
    if (t.status !== 'esign_pending') throw new SandboxError('conflict', `transaction is ${t.status}`, undefined, statusRefusal(t.status));
    if (!t.body.participants.some((p) => p.id === participantId)) {
      throw new SandboxError('not_found', `participant ${participantId} is not in this transaction`, undefined, 'participant_mismatch');
    }
    const finished = this.#store.finishedParticipants(t.id);
    if (finished.has(participantId)) throw new SandboxError('conflict', 'this participant has already signed', undefined, 'already_signed');
    if (t.body.signingOrder) {
      const next = nextSigner(t.body, finished);
      if (next && next.id !== participantId) {
        throw new SandboxError('conflict', `signing order: it is ${next.firstName} ${next.lastName}'s turn`, undefined, 'not_your_turn');
      }
    }
  }

  async #finishParticipant(
    t: TransactionRow,
    participantId: string,
    values: Record<string, string>,
    fillDefaults: boolean,
    client: ClientInfo,
  ): Promise<{ completed: boolean }> {
    const now = this.#options.now();
    const signer = t.body.participants.find((p) => p.id === participantId)!;
    const applied = new Map(this.#store.appliedTags(t.id).map((a) => [`${a.docIndex}:${a.tagIndex}`, a.value]));
    const missing: string[] = [];
    // The tags, the participant's finish and its webhook commit together.
    this.#outbox.publish(
      t,
      ESIGN_PARTICIPANT_SIGNED_EVENT,
      () => {
        t.body.documents.forEach((d, docIndex) => {
          d.tags.forEach((tag, tagIndex) => {
            if (tag.signerId !== participantId) return;
            const key = `${docIndex}:${tagIndex}`;
            const value =
              values[key] ??
              applied.get(key) ??
              (fillDefaults ? defaultTagValue(tag, signer, { now, documentId: d.id ?? '', esignId: t.esignId }) : undefined);
            if (value === undefined) {
              if (isRequired(tag)) missing.push(`documents[${docIndex}].tags[${tagIndex}]`);
              return;
            }
            this.#store.applyTag({ transactionId: t.id, docIndex, tagIndex, participantId, value, appliedAt: now.toISOString() });
            if (applied.get(key) !== value) {
              const detail = { document: docIndex, tag: tagIndex, type: tag.type };
              this.#store.evidence.audit(t.id, { at: now.toISOString(), type: 'tag_applied', participantId, detail, ...client });
            }
          });
        });
        if (missing.length > 0) {
          throw new SandboxError('validation', `required tags not applied: ${missing.join(', ')}`);
        }
        this.#store.finishParticipant(t.id, participantId, now.toISOString());
        this.#store.evidence.audit(t.id, { at: now.toISOString(), type: 'signed', participantId, ...client });
        this.#mailer.inviteNext(t);
      },
      participantId,
    );
    const finished = this.#store.finishedParticipants(t.id);
    const allDone = t.body.participants.every((p) => finished.has(p.id));
    if (allDone) await this.#completion.complete(t.id);
    return { completed: allDone };
  }
}

function statusRefusal(status: string): SigningRefusal | undefined {
  switch (status) {
    case 'esign_pending':
      return undefined;
    case 'completed':
      return 'completed';
    case 'cancelled':
      return 'cancelled';
    case 'declined':
      return 'declined';
    case 'draft':
      return 'not_sent';
    default:
      return 'expired';
  }
}
