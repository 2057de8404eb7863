import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  CreateTransactionRequest,
  IframeRequest,
  ListTransactionsQuery,
  UpdateTransactionRequest,
  type TransactionRecord,
  type UploadResponse,
} from '../../../src/esign/schemas.js';
import { keptSignatures } from './corrections.js';
import { SandboxError, validated } from './errors.js';
import type { ClientInfo } from './authentication.js';
import type { SandboxMailer } from './mailer.js';
import { InvalidPdfError, inspectPdf } from '../../../src/storage/pdf-inspect.js';
import { ownedTransaction, toRecord } from './records.js';
import type { SandboxStore, TransactionBody, TransactionRow as TransactionRecordRow } from './store.js';
import type { SandboxTokens } from './tokens.js';

export interface IncomingFile {
  fileName: string;
  /** Where the HTTP layer spooled the upload. The domain moves or deletes it. */
  tempPath: string;
  bytes: number;
  sha256: string;
}

export interface ProviderApiOptions {
  uploadShape: 'envelope' | 'array';
  /** Read per request: the base URL is known only once the server listens. */
  signingBaseUrl: () => string;
  iframeTtlSeconds: number;
  mailer: SandboxMailer;
  now: () => Date;
}

/**
 * The spec's operations (upload … iframe URL) as the provider sandbox
 * implements them, independent of HTTP. Organizations see only their own
 * uploads and transactions.
 */
export class ProviderApi {
  readonly #store: SandboxStore;
  readonly #tokens: SandboxTokens;
  readonly #options: ProviderApiOptions;

  constructor(store: SandboxStore, tokens: SandboxTokens, options: ProviderApiOptions) {
    this.#store = store;
    this.#tokens = tokens;
    this.#options = options;
  }

  /** Validates every file as a PDF, then stores all of them or none. */
  async upload(org: string, files: readonly IncomingFile[]): Promise<UploadResponse> {
    if (files.length === 0) {
      throw new SandboxError('validation', 'no file in form field "files"', [
        { pointer: '/files', detail: 'files: at least one PDF is required' },
      ]);
    }
    const accepted: { file: IncomingFile; pageSizes: [number, number][]; storagePath: string; docId: string }[] = [];
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
        accepted.push({ file, pageSizes, storagePath: `${randomUUID()}/${safePdfName(file.fileName)}`, docId: randomUUID() });
      }
      const createdAt = this.#options.now().toISOString();
      for (const a of accepted) {
        const path = this.#store.uploadPath(a.storagePath);
        await mkdir(dirname(path), { recursive: true });
        await rename(a.file.tempPath, path);
      }
      this.#store.transaction(() => {
        for (const a of accepted) {
          this.#store.insertUpload({
            storagePath: a.storagePath,
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
      return accepted.map((a) => ({ file: a.file.fileName, status: 'uploaded' as const, StoragePath: a.storagePath }));
    }
    return { data: accepted.map((a) => ({ StoragePath: a.storagePath, docId: a.docId })) };
  }

  createTransaction(org: string, input: unknown, client: ClientInfo = {}): TransactionRecord {
    const body = validated(CreateTransactionRequest, input, 'transaction');
    const stored = this.#resolveDocuments(org, body);
    const now = this.#options.now().toISOString();
    const id = randomUUID();
    this.#store.transaction(() => {
      this.#store.insertTransaction({ id, esignId: randomUUID(), org, status: body.status, body: stored, createdAt: now, updatedAt: now });
      this.#store.evidence.audit(id, { at: now, type: 'created', ...client });
      this.#sent(this.#store.getTransaction(id)!, now, client);
    });
    return toRecord(this.#store, this.#store.getTransaction(id)!);
  }

  /** A transaction that is now out for signature: recorded, and its first invitations sent. */
  #sent(t: TransactionRecordRow, at: string, client: ClientInfo): void {
    if (t.status !== 'esign_pending') return;
    this.#store.evidence.audit(t.id, { at, type: 'sent', ...client });
    this.#options.mailer.inviteNext(t);
  }

  getTransaction(org: string, id: string): TransactionRecord {
    return toRecord(this.#store, ownedTransaction(this.#store, org, id));
  }

  updateTransaction(org: string, id: string, input: unknown, client: ClientInfo = {}): TransactionRecord {
    const body = validated(UpdateTransactionRequest, input, 'transaction');
    return this.#store.transaction(() => {
      const current = ownedTransaction(this.#store, org, id);
      if (current.status !== 'draft' && current.status !== 'esign_pending') {
        throw new SandboxError('conflict', `transaction is ${current.status} and can no longer be changed`);
      }
      // Fields the update operation does not carry (4.4) are kept from creation.
      const { taggingOrganizationId, taggingUserId, evault, sendFinalEnoteTo } = current.body;
      const merged: TransactionBody = { taggingOrganizationId, taggingUserId, evault, sendFinalEnoteTo, ...body };
      const stored = this.#resolveDocuments(org, merged);
      const signed = this.#store.finishedParticipants(id);
      // Someone signed: a correction, which keeps what they signed (./corrections.ts); else everyone starts over.
      if (signed.size > 0 && body.status === 'draft')
        throw new SandboxError('conflict', 'a participant has already signed: the transaction cannot go back to draft');
      if (signed.size > 0) this.#store.keepSigning(id, signed, keptSignatures(current.body, stored, signed, this.#store.appliedTags(id)));
      else this.#store.clearSigning(id);
      const at = this.#options.now().toISOString();
      this.#store.updateTransaction(id, { status: body.status, body: stored, updatedAt: at });
      const updated = this.#store.getTransaction(id)!;
      // Sent by this update (a draft going out): a replaced pending transaction keeps its earlier invitations.
      if (current.status === 'draft') this.#sent(updated, at, client);
      else this.#options.mailer.inviteNext(updated);
      return toRecord(this.#store, updated);
    });
  }

  listTransactions(org: string, query: unknown): { data: TransactionRecord[]; total: number } {
    const q = validated(ListTransactionsQuery, query, 'query', 'bad_request');
    const { rows, total } = this.#store.listTransactions(org, q.status, q.limit, q.offset);
    return { data: rows.map((r) => toRecord(this.#store, r)), total };
  }

  /** The completed ZIP on disk; 409 until the transaction is completed. */
  completedZip(org: string, id: string, type: unknown): { path: string; bytes: number; sha256: string } {
    if (type !== 'completed') {
      throw new SandboxError('bad_request', 'query parameter "type" must be "completed"', [
        { pointer: '/type', detail: `type: expected "completed", got ${JSON.stringify(type ?? null)}` },
      ]);
    }
    const t = ownedTransaction(this.#store, org, id);
    if (t.status !== 'completed' || t.zipBytes === null || t.zipSha256 === null) {
      throw new SandboxError('conflict', `transaction is ${t.status}; completed documents exist once it is completed`);
    }
    return { path: this.#store.completedZipPath(t.id), bytes: t.zipBytes, sha256: t.zipSha256 };
  }

  async createIframeUrl(org: string, input: unknown): Promise<{ url: string }> {
    const request = validated(IframeRequest, input, 'iframe request');
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
    return { url: `${this.#options.signingBaseUrl()}/sign/${token}` };
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
