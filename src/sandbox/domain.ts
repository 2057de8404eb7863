import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import {
  CreateTransactionRequest,
  ESIGN_COMPLETED_EVENT,
  IframeRequest,
  ListTransactionsQuery,
  UpdateTransactionRequest,
  type EsignCompletedWebhook,
  type IframeStyle,
  type Participant,
  type Tag,
  type TransactionRecord,
  type UploadResponse,
} from '../esign/schemas.js';
import { issuesToProblemErrors } from '../util/zod-issues.js';
import { appliedStyle } from './style.js';
import { InvalidPdfError, inspectPdf, stampPdf } from './pdf.js';
import type { SandboxStore, TransactionBody, TransactionRow } from './store.js';
import { defaultTagValue, isRequired } from './tag-values.js';
import { TokenError, type SandboxTokens } from './tokens.js';
import { writeZip, zipEntryName } from './zip.js';

export type SandboxErrorKind = 'bad_request' | 'validation' | 'not_found' | 'conflict' | 'too_large' | 'unauthorized' | 'forbidden';

/** A typed domain failure; the HTTP layer maps `kind` to a status. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';
  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    readonly errors?: { pointer: string; detail: string }[],
  ) {
    super(message);
  }
}

function validation<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const errors = issuesToProblemErrors(parsed.error);
    throw new SandboxError('validation', `${what} is invalid: ${errors.map((e) => e.detail).join('; ')}`, errors);
  }
  return parsed.data;
}

export interface IncomingFile {
  fileName: string;
  /** Where the HTTP layer spooled the upload. The domain moves or deletes it. */
  tempPath: string;
  bytes: number;
  sha256: string;
}

export interface SandboxOptions {
  uploadShape: 'envelope' | 'array';
  signingBaseUrl: string;
  iframeTtlSeconds: number;
  webhookUrls: () => readonly string[];
  onWebhookEnqueued: () => void;
  now?: () => Date;
}

/** Why a signing page cannot be shown (spec section 7). */
export type SigningRefusal =
  'link_invalid' | 'link_expired' | 'not_found' | 'participant_mismatch' | 'completed' | 'cancelled' | 'expired' | 'not_sent';

export interface SigningTagView {
  docIndex: number;
  tagIndex: number;
  type: Tag['type'];
  page: number;
  x: number;
  y: number;
  width: number;
  height: number;
  required: boolean;
  participantId: string;
  suggested: string;
  applied: string | null;
}

export interface SigningView {
  esignId: string;
  transactionId: string;
  title: string;
  style: IframeStyle;
  signingOrder: boolean;
  participants: { id: string; name: string; finished: boolean; yourTurn: boolean; waitingFor: string | null }[];
  documents: { index: number; title: string; pageSizes: [number, number][]; tags: SigningTagView[] }[];
}

/**
 * The provider's business rules, independent of HTTP. Organizations see only
 * their own uploads and transactions.
 */
export class Sandbox {
  readonly #store: SandboxStore;
  readonly #tokens: SandboxTokens;
  readonly #options: SandboxOptions;
  readonly #completing = new Map<string, Promise<void>>();

  constructor(store: SandboxStore, tokens: SandboxTokens, options: SandboxOptions) {
    this.#store = store;
    this.#tokens = tokens;
    this.#options = options;
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  // ------------------------------------------------------------------ upload

  /** Validates every file as a PDF, then stores all of them or none. */
  async upload(org: string, files: readonly IncomingFile[]): Promise<UploadResponse> {
    if (files.length === 0) {
      throw new SandboxError('validation', 'no file in form field "files"', [
        { pointer: '/files', detail: 'files: at least one PDF is required' },
      ]);
    }
    const accepted: { file: IncomingFile; pageSizes: [number, number][]; folder: string; name: string; docId: string }[] = [];
    try {
      for (const [i, file] of files.entries()) {
        let pageSizes: [number, number][];
        try {
          ({ pageSizes } = await inspectPdf(await readFile(file.tempPath)));
        } catch (err) {
          if (err instanceof InvalidPdfError) {
            throw new SandboxError('validation', `files[${i}] (${file.fileName}): ${err.message}`, [
              { pointer: `/files/${i}`, detail: `files[${i}]: ${err.message}` },
            ]);
          }
          throw err;
        }
        accepted.push({ file, pageSizes, folder: randomUUID(), name: safePdfName(file.fileName), docId: randomUUID() });
      }
      const createdAt = this.#now().toISOString();
      for (const a of accepted) {
        const dir = join(this.#store.filesDir, 'uploads', a.folder);
        await mkdir(dir, { recursive: true });
        await rename(a.file.tempPath, join(dir, a.name));
      }
      this.#store.transaction(() => {
        for (const a of accepted) {
          this.#store.insertUpload({
            storagePath: `${a.folder}/${a.name}`,
            docId: a.docId,
            org,
            fileName: a.file.fileName,
            bytes: a.file.bytes,
            sha256: a.file.sha256,
            pageSizes: a.pageSizes,
            createdAt,
          });
        }
      });
    } finally {
      await Promise.all(files.map((f) => rm(f.tempPath, { force: true })));
    }
    if (this.#options.uploadShape === 'array') {
      return accepted.map((a) => ({ file: a.file.fileName, status: 'uploaded' as const, StoragePath: `${a.folder}/${a.name}` }));
    }
    return { data: accepted.map((a) => ({ StoragePath: `${a.folder}/${a.name}`, docId: a.docId })) };
  }

  uploadPath(storagePath: string): string {
    return join(this.#store.filesDir, 'uploads', ...storagePath.split('/'));
  }

  // ------------------------------------------------------------ transactions

  createTransaction(org: string, input: unknown): TransactionRecord {
    const body = validation(CreateTransactionRequest, input, 'transaction');
    const stored = this.#resolveDocuments(org, body);
    const now = this.#now().toISOString();
    const id = randomUUID();
    this.#store.insertTransaction({ id, esignId: randomUUID(), org, status: body.status, body: stored, createdAt: now, updatedAt: now });
    return this.#record(this.#store.getTransaction(id)!);
  }

  getTransaction(org: string, id: string): TransactionRecord {
    return this.#record(this.#owned(org, id));
  }

  updateTransaction(org: string, id: string, input: unknown): TransactionRecord {
    const body = validation(UpdateTransactionRequest, input, 'transaction');
    return this.#store.transaction(() => {
      const current = this.#owned(org, id);
      if (current.status !== 'draft' && current.status !== 'esign_pending') {
        throw new SandboxError('conflict', `transaction is ${current.status} and can no longer be changed`);
      }
      if (this.#store.finishedParticipants(id).size > 0) {
        throw new SandboxError('conflict', 'a participant has already signed; the transaction can no longer be replaced');
      }
      // Fields the update operation does not carry (4.4) are kept from creation.
      const { taggingOrganizationId, taggingUserId, evault, sendFinalEnoteTo } = current.body;
      const merged: TransactionBody = { taggingOrganizationId, taggingUserId, evault, sendFinalEnoteTo, ...body };
      const stored = this.#resolveDocuments(org, merged);
      this.#store.clearSigning(id);
      this.#store.updateTransaction(id, { status: body.status, body: stored, updatedAt: this.#now().toISOString() });
      return this.#record(this.#store.getTransaction(id)!);
    });
  }

  listTransactions(org: string, query: unknown): { data: TransactionRecord[]; total: number } {
    const q = validation(ListTransactionsQuery, query, 'query');
    const { rows, total } = this.#store.listTransactions(org, q.status, q.limit, q.offset);
    return { data: rows.map((r) => this.#record(r)), total };
  }

  /** The completed ZIP on disk; 409 until the transaction is completed. */
  completedZip(org: string, id: string, type: unknown): { path: string; bytes: number; sha256: string } {
    if (type !== 'completed') {
      throw new SandboxError('bad_request', 'query parameter "type" must be "completed"', [
        { pointer: '/type', detail: `type: expected "completed", got ${JSON.stringify(type ?? null)}` },
      ]);
    }
    const t = this.#owned(org, id);
    if (t.status !== 'completed' || t.zipBytes === null || t.zipSha256 === null) {
      throw new SandboxError('conflict', `transaction is ${t.status}; completed documents exist once it is completed`);
    }
    return { path: this.#zipPath(t.id), bytes: t.zipBytes, sha256: t.zipSha256 };
  }

  async createIframeUrl(org: string, input: unknown): Promise<{ url: string }> {
    const request = validation(IframeRequest, input, 'iframe request');
    const t = this.#store.getTransactionByEsignId(request.data.esignId);
    if (!t || t.org !== org) throw new SandboxError('not_found', `no transaction with esignId ${request.data.esignId}`);
    const known = new Set(t.body.participants.map((p) => p.id));
    const errors = request.data.participantIds
      .map((pid, i) => ({ pid, i }))
      .filter(({ pid }) => !known.has(pid))
      .map(({ pid, i }) => ({
        pointer: `/data/participantIds/${i}`,
        detail: `data.participantIds[${i}]: "${pid}" is not a participant of this transaction`,
      }));
    if (errors.length > 0) throw new SandboxError('validation', errors.map((e) => e.detail).join('; '), errors);
    const token = await this.#tokens.issueSigningToken(
      { esignId: t.esignId, participantIds: [...new Set(request.data.participantIds)], style: request.style },
      this.#options.iframeTtlSeconds,
    );
    return { url: `${this.#options.signingBaseUrl}/sign/${token}` };
  }

  // ----------------------------------------------------------------- signing

  /**
   * Opens a signing address: its transaction and claims, or why it cannot be
   * used (spec section 7). The page, its documents and its actions all go
   * through here, so they refuse the same things.
   */
  async #openAddress(
    token: string,
  ): Promise<{ t: TransactionRow; participantIds: string[]; style: IframeStyle } | { refusal: SigningRefusal; style: IframeStyle }> {
    let claims;
    try {
      claims = await this.#tokens.verifySigningToken(token);
    } catch (err) {
      if (err instanceof TokenError) return { refusal: err.expired ? 'link_expired' : 'link_invalid', style: {} };
      throw err;
    }
    const style = appliedStyle(claims.style);
    const t = this.#store.getTransactionByEsignId(claims.esignId);
    if (!t || t.status === 'deleted') return { refusal: 'not_found', style };
    const refusal = statusRefusal(t.status);
    if (refusal) return { refusal, style };
    const known = new Set(t.body.participants.map((p) => p.id));
    if (claims.participantIds.some((pid) => !known.has(pid))) return { refusal: 'participant_mismatch', style };
    return { t, participantIds: claims.participantIds, style };
  }

  /** Resolves a signing address to what its page shows, or to why it cannot be shown. */
  async signingView(token: string): Promise<SigningView | { refusal: SigningRefusal; style: IframeStyle }> {
    const opened = await this.#openAddress(token);
    return 'refusal' in opened ? opened : this.#view(opened.t, opened.participantIds, opened.style);
  }

  #view(t: TransactionRow, participantIds: readonly string[], style: IframeStyle): SigningView {
    const finished = this.#store.finishedParticipants(t.id);
    const applied = new Map(this.#store.appliedTags(t.id).map((a) => [`${a.docIndex}:${a.tagIndex}`, a.value]));
    const next = nextSigner(t.body, finished);
    const now = this.#now();
    const mine = new Set(participantIds);
    return {
      esignId: t.esignId,
      transactionId: t.id,
      title: t.body.documents.map((d) => d.title).join(', '),
      style,
      signingOrder: t.body.signingOrder === true,
      participants: participantIds.map((pid) => {
        const p = t.body.participants.find((x) => x.id === pid)!;
        const yourTurn = !finished.has(pid) && (!t.body.signingOrder || next?.id === pid);
        return {
          id: pid,
          name: `${p.firstName} ${p.lastName}`,
          finished: finished.has(pid),
          yourTurn,
          waitingFor: !finished.has(pid) && !yourTurn && next ? `${next.firstName} ${next.lastName}` : null,
        };
      }),
      documents: t.body.documents.map((d, docIndex) => {
        const upload = this.#store.getUpload(d.StoragePath, t.org);
        return {
          index: docIndex,
          title: d.title,
          pageSizes: upload?.pageSizes ?? [[612, 792]],
          tags: d.tags
            .map((tag, tagIndex) => ({ tag, tagIndex }))
            .filter(({ tag }) => mine.has(tag.signerId))
            .map(({ tag, tagIndex }) => ({
              docIndex,
              tagIndex,
              type: tag.type,
              page: tag.page,
              x: tag.x,
              y: tag.y,
              width: tag.width,
              height: tag.height,
              required: isRequired(tag),
              participantId: tag.signerId,
              suggested: defaultTagValue(
                tag,
                t.body.participants.find((p) => p.id === tag.signerId)!,
                {
                  now,
                  documentId: d.id ?? '',
                  esignId: t.esignId,
                },
              ),
              applied: applied.get(`${docIndex}:${tagIndex}`) ?? null,
            })),
        };
      }),
    };
  }

  /** The original PDF of one document, for a signing page that may still be used. */
  async documentForSigning(token: string, docIndex: number): Promise<string> {
    const opened = await this.#openAddress(token);
    if ('refusal' in opened) throw new SandboxError('forbidden', `signing page unavailable: ${opened.refusal}`);
    const doc = Number.isInteger(docIndex) ? opened.t.body.documents[docIndex] : undefined;
    if (!doc) throw new SandboxError('not_found', 'no such document');
    return this.uploadPath(doc.StoragePath);
  }

  /** Applies one tag from a signing page. */
  async applyTagWithToken(token: string, participantId: string, docIndex: number, tagIndex: number, value: string): Promise<void> {
    const t = await this.#signable(token, participantId);
    const tag = t.body.documents[docIndex]?.tags[tagIndex];
    if (!tag || tag.signerId !== participantId) throw new SandboxError('not_found', 'no such tag for this participant');
    if (value.trim() === '' || value.length > 500) throw new SandboxError('validation', 'value must be 1 to 500 characters');
    this.#store.applyTag({ transactionId: t.id, docIndex, tagIndex, participantId, value, appliedAt: this.#now().toISOString() });
  }

  /** Finishes a participant from a signing page; returns whether the transaction is now completed. */
  async finishWithToken(token: string, participantId: string): Promise<{ completed: boolean }> {
    const t = await this.#signable(token, participantId);
    return this.#finish(t, participantId, {});
  }

  /** Test control: sign every tag of a participant with default (or given) values, without a browser. */
  async signAs(id: string, participantId: string, values: Record<string, string> = {}): Promise<{ completed: boolean }> {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    this.#checkSignable(t, participantId);
    return this.#finish(t, participantId, values, true);
  }

  async #signable(token: string, participantId: string): Promise<TransactionRow> {
    const opened = await this.#openAddress(token);
    if ('refusal' in opened) {
      const expiredOrInvalid = opened.refusal === 'link_invalid' || opened.refusal === 'link_expired';
      throw new SandboxError(expiredOrInvalid ? 'unauthorized' : 'conflict', `signing address unusable: ${opened.refusal}`);
    }
    if (!opened.participantIds.includes(participantId))
      throw new SandboxError('forbidden', 'this address was not issued for that participant');
    this.#checkSignable(opened.t, participantId);
    return opened.t;
  }

  #checkSignable(t: TransactionRow, participantId: string): void {
    if (t.status !== 'esign_pending') throw new SandboxError('conflict', `transaction is ${t.status}`);
    if (!t.body.participants.some((p) => p.id === participantId)) {
      throw new SandboxError('not_found', `participant ${participantId} is not in this transaction`);
    }
    const finished = this.#store.finishedParticipants(t.id);
    if (finished.has(participantId)) throw new SandboxError('conflict', 'this participant has already signed');
    if (t.body.signingOrder) {
      const next = nextSigner(t.body, finished);
      if (next && next.id !== participantId) {
        throw new SandboxError('conflict', `signing order: it is ${next.firstName} ${next.lastName}'s turn`);
      }
    }
  }

  async #finish(
    t: TransactionRow,
    participantId: string,
    values: Record<string, string>,
    fillDefaults = false,
  ): Promise<{ completed: boolean }> {
    const now = this.#now();
    const signer = t.body.participants.find((p) => p.id === participantId)!;
    const applied = new Map(this.#store.appliedTags(t.id).map((a) => [`${a.docIndex}:${a.tagIndex}`, a.value]));
    const missing: string[] = [];
    this.#store.transaction(() => {
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
        });
      });
      if (missing.length > 0) {
        throw new SandboxError('validation', `required tags not applied: ${missing.join(', ')}`);
      }
      this.#store.finishParticipant(t.id, participantId, now.toISOString());
    });
    const finished = this.#store.finishedParticipants(t.id);
    const allDone = t.body.participants.every((p) => finished.has(p.id));
    if (allDone) await this.#complete(t.id);
    return { completed: allDone };
  }

  /** Completes a fully signed transaction once, even if asked concurrently. */
  async #complete(id: string): Promise<void> {
    const running = this.#completing.get(id);
    if (running) return running;
    const work = this.#doComplete(id).finally(() => this.#completing.delete(id));
    this.#completing.set(id, work);
    return work;
  }

  async #doComplete(id: string): Promise<void> {
    const t = this.#store.getTransaction(id);
    if (!t || t.status !== 'esign_pending') return;
    const applied = this.#store.appliedTags(id);
    const dir = join(this.#store.filesDir, 'completed', id);
    await mkdir(dir, { recursive: true });
    const taken = new Set<string>();
    const entries = [];
    for (const [docIndex, d] of t.body.documents.entries()) {
      const original = await readFile(this.uploadPath(d.StoragePath));
      const stamps = applied
        .filter((a) => a.docIndex === docIndex)
        .map((a) => ({ tag: d.tags[a.tagIndex]!, value: a.value }))
        .filter((s) => s.tag !== undefined);
      const path = join(dir, `${docIndex}.pdf`);
      await writeFile(path, await stampPdf(original, stamps));
      entries.push({ name: zipEntryName(d.title, docIndex, taken), path });
    }
    this.#finishCompletion(t, await writeZip(entries, this.#zipPath(id)));
  }

  /** Marks a transaction completed with its ZIP and queues its webhooks, in one SQLite transaction. */
  #finishCompletion(t: TransactionRow, zip: { bytes: number; sha256: string }): void {
    const id = t.id;
    const completedAt = this.#now().toISOString();
    const notification: EsignCompletedWebhook = {
      event: ESIGN_COMPLETED_EVENT,
      entity: 'esign',
      data: { notificationId: randomUUID(), entity_id: t.esignId, transaction_id: t.id },
    };
    const payload = JSON.stringify(notification);
    const urls = this.#options.webhookUrls();
    this.#store.transaction(() => {
      this.#store.completeTransaction(id, completedAt, zip);
      for (const url of urls) {
        this.#store.enqueueDelivery({ notificationId: notification.data.notificationId, url, payload, now: Date.now() });
      }
    });
    if (urls.length > 0) this.#options.onWebhookEnqueued();
  }

  /**
   * Test control: completes a pending transaction with a ZIP supplied from
   * outside (benchmarks need completed ZIPs of any size), then notifies.
   */
  async completeWithZip(id: string, zipTempPath: string, zip: { bytes: number; sha256: string }): Promise<TransactionRecord> {
    const t = this.#store.getTransaction(id);
    if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
    if (t.status !== 'esign_pending') throw new SandboxError('conflict', `transaction is ${t.status}`);
    await mkdir(join(this.#store.filesDir, 'completed'), { recursive: true });
    await rename(zipTempPath, this.#zipPath(id));
    this.#finishCompletion(t, zip);
    return this.#record(this.#store.getTransaction(id)!);
  }

  /** After a crash between the last signature and completion, finish the job. */
  async recoverCompletions(): Promise<number> {
    const pending = this.#store.db.prepare(`SELECT id FROM transactions WHERE status = 'esign_pending'`).all() as { id: string }[];
    let n = 0;
    for (const { id } of pending) {
      const t = this.#store.getTransaction(id)!;
      const finished = this.#store.finishedParticipants(id);
      if (t.body.participants.every((p) => finished.has(p.id))) {
        await this.#complete(id);
        n++;
      }
    }
    return n;
  }

  /** Test control: cancel, expire or delete a transaction that is not completed. */
  setTerminalStatus(id: string, status: 'cancelled' | 'expired' | 'deleted'): TransactionRecord {
    return this.#store.transaction(() => {
      const t = this.#store.getTransaction(id);
      if (!t) throw new SandboxError('not_found', `no transaction ${id}`);
      if (t.status === 'completed') throw new SandboxError('conflict', 'transaction is already completed');
      this.#store.updateTransaction(id, { status, updatedAt: this.#now().toISOString() });
      return this.#record(this.#store.getTransaction(id)!);
    });
  }

  /** Test control: the raw transaction, across organizations (for assertions and tooling). */
  inspect(id: string): { record: TransactionRecord; zip: { bytes: number; sha256: string } | null; org: string } | undefined {
    const t = this.#store.getTransaction(id) ?? this.#store.getTransactionByEsignId(id);
    if (!t) return undefined;
    return {
      record: this.#record(t),
      zip: t.zipBytes !== null && t.zipSha256 !== null ? { bytes: t.zipBytes, sha256: t.zipSha256 } : null,
      org: t.org,
    };
  }

  /** Test control: totals across organizations, e.g. to prove a refused request reached nothing. */
  stats(): { uploads: number; transactions: number } {
    return this.#store.counts();
  }

  // ------------------------------------------------------------------ helpers

  #owned(org: string, id: string): TransactionRow {
    const t = this.#store.getTransaction(id);
    // Another organization's transaction is reported as absent, not forbidden.
    if (!t || t.org !== org) throw new SandboxError('not_found', `no transaction ${id}`);
    return t;
  }

  #zipPath(id: string): string {
    return join(this.#store.filesDir, 'completed', `${id}.zip`);
  }

  /** Checks StoragePaths against this organization's uploads and fills in ids and page counts. */
  #resolveDocuments(org: string, body: TransactionBody): TransactionBody {
    const errors: { pointer: string; detail: string }[] = [];
    const documents = body.documents.map((d, i) => {
      const upload = this.#store.getUpload(d.StoragePath, org);
      if (!upload) {
        errors.push({
          pointer: `/documents/${i}/StoragePath`,
          detail: `documents[${i}].StoragePath: "${d.StoragePath}" was never uploaded`,
        });
        return d;
      }
      const pages = upload.pageSizes.length;
      d.tags.forEach((tag, ti) => {
        if (tag.page >= pages) {
          errors.push({
            pointer: `/documents/${i}/tags/${ti}/page`,
            detail: `documents[${i}].tags[${ti}].page: page ${tag.page} does not exist (the document has ${pages}; pages count from 0)`,
          });
        }
      });
      return { ...d, id: d.id ?? randomUUID(), pages, sessionType: d.sessionType ?? 'esign' };
    });
    if (errors.length > 0) throw new SandboxError('validation', errors.map((e) => e.detail).join('; '), errors);
    return { ...body, documents };
  }

  /** The record as the API returns it. Signer passwords are never returned. */
  #record(t: TransactionRow): TransactionRecord {
    const { participants, ...rest } = t.body;
    return {
      ...stripUndefined(rest),
      id: t.id,
      esignId: t.esignId,
      status: t.status,
      participants: participants.map(({ personalPassword: _secret, ...p }) => p),
      createdAt: t.createdAt,
      updatedAt: t.updatedAt,
      ...(t.completedAt ? { completedAt: t.completedAt } : {}),
    };
  }
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function statusRefusal(status: string): SigningRefusal | undefined {
  switch (status) {
    case 'esign_pending':
      return undefined;
    case 'completed':
      return 'completed';
    case 'cancelled':
      return 'cancelled';
    case 'draft':
      return 'not_sent';
    default:
      return 'expired';
  }
}

/** With signing order, the unfinished participant with the lowest `order` (then position) signs next. */
function nextSigner(body: TransactionBody, finished: Set<string>): Participant | undefined {
  return body.participants
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => !finished.has(p.id))
    .sort((a, b) => (a.p.order ?? a.i) - (b.p.order ?? b.i) || a.i - b.i)[0]?.p;
}

function safePdfName(fileName: string): string {
  const base = fileName.split(/[\\/]/).pop() ?? '';
  const cleaned = base
    .replace(/\.pdf$/i, '')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 100);
  return `${cleaned || 'document'}.pdf`;
}
