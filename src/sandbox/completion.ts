import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ESIGN_COMPLETED_EVENT } from '../esign/events.js';
import type { EventOutbox } from './outbox.js';
import { stampPdf } from './pdf.js';
import type { SandboxStore, TransactionRow } from './store.js';
import { writeZip, zipEntryName } from './zip.js';

export interface CompletionOptions {
  outbox: EventOutbox;
  now: () => Date;
}

/**
 * What happens after the last signature: each document is stamped with its
 * applied tags, zipped, and the transaction is marked completed with its
 * `esign-completed` webhooks queued, in one SQLite transaction.
 */
export class CompletionPipeline {
  readonly #store: SandboxStore;
  readonly #options: CompletionOptions;
  readonly #running = new Map<string, Promise<void>>();

  constructor(store: SandboxStore, options: CompletionOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** Completes a fully signed transaction once, even if asked concurrently. */
  complete(id: string): Promise<void> {
    const running = this.#running.get(id);
    if (running) return running;
    const work = this.#complete(id).finally(() => this.#running.delete(id));
    this.#running.set(id, work);
    return work;
  }

  /** After a crash between the last signature and completion, finishes the job; returns how many it completed. */
  async recover(): Promise<number> {
    let n = 0;
    for (const t of this.#store.pendingTransactions()) {
      const finished = this.#store.finishedParticipants(t.id);
      if (t.body.participants.every((p) => finished.has(p.id))) {
        await this.complete(t.id);
        n++;
      }
    }
    return n;
  }

  /** Completes a pending transaction with a ZIP made elsewhere (already hashed at `zipTempPath`), then notifies. */
  async completeWithZip(t: TransactionRow, zipTempPath: string, zip: { bytes: number; sha256: string }): Promise<void> {
    const target = this.#store.completedZipPath(t.id);
    await mkdir(dirname(target), { recursive: true });
    await rename(zipTempPath, target);
    this.#markCompleted(t, zip);
  }

  async #complete(id: string): Promise<void> {
    const t = this.#store.getTransaction(id);
    if (!t || t.status !== 'esign_pending') return;
    const applied = this.#store.appliedTags(id);
    const dir = this.#store.completedDir(id);
    await mkdir(dir, { recursive: true });
    const taken = new Set<string>();
    const entries = [];
    for (const [docIndex, d] of t.body.documents.entries()) {
      const original = await readFile(this.#store.uploadPath(d.StoragePath));
      const stamps = applied
        .filter((a) => a.docIndex === docIndex)
        .map((a) => ({ tag: d.tags[a.tagIndex]!, value: a.value }))
        .filter((s) => s.tag !== undefined);
      const path = join(dir, `${docIndex}.pdf`);
      await writeFile(path, await stampPdf(original, stamps));
      entries.push({ name: zipEntryName(d.title, docIndex, taken), path });
    }
    this.#markCompleted(t, await writeZip(entries, this.#store.completedZipPath(id)));
  }

  #markCompleted(t: TransactionRow, zip: { bytes: number; sha256: string }): void {
    const completedAt = this.#options.now().toISOString();
    this.#options.outbox.publish(t, ESIGN_COMPLETED_EVENT, () => this.#store.completeTransaction(t.id, completedAt, zip));
  }
}
