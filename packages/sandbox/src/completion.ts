import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ESIGN_COMPLETED_EVENT } from '../../../src/esign/events.js';
import {
  AUDIT_TRAIL_ENTRY,
  AUDIT_TRAIL_FORMAT,
  CHAIN_ALGORITHM,
  COMPLETION_CERTIFICATE_ENTRY,
  EVIDENCE_ENTRIES,
  type AuditTrail,
} from '../../../src/esign/evidence.js';
import { chainEvents } from '../../../src/esign/audit-chain.js';
import { renderCompletionCertificate } from './certificate.js';
import type { EventOutbox } from './outbox.js';
import { stampPdf } from './pdf.js';
import type { SandboxSeal } from './seal.js';
import { authenticationSteps } from './authentication.js';
import type { SandboxStore, TransactionRow } from './store.js';
import { writeZip, zipEntryName } from './zip.js';

export interface CompletionOptions {
  outbox: EventOutbox;
  seal: SandboxSeal;
  now: () => Date;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * What happens after the last signature: each document is stamped with its
 * applied tags and sealed, the evidence is written and everything zipped,
 * and the transaction is marked completed with its `esign-completed`
 * webhooks queued, in one SQLite transaction.
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

  /**
   * Stamps each document with its applied tags and seals it, writes the audit
   * trail and the sealed certificate of completion, and zips them all:
   * documents first, in order, then the evidence (docs/spec-gaps.md, row 41).
   */
  async #complete(id: string): Promise<void> {
    const t = this.#store.getTransaction(id);
    if (!t || t.status !== 'esign_pending') return;
    const completedAt = this.#options.now();
    const { seal } = this.#options;
    const applied = this.#store.appliedTags(id);
    const dir = this.#store.completedDir(id);
    await mkdir(dir, { recursive: true });
    const taken = new Set<string>(EVIDENCE_ENTRIES);
    const entries = [];
    const documents: AuditTrail['documents'] = [];
    for (const [docIndex, d] of t.body.documents.entries()) {
      const original = await readFile(this.#store.uploadPath(d.StoragePath));
      const stamps = applied
        .filter((a) => a.docIndex === docIndex)
        .map((a) => ({ tag: d.tags[a.tagIndex]!, value: a.value }))
        .filter((s) => s.tag !== undefined);
      const sealed = await seal.seal(await stampPdf(original, stamps), 'Signed by every participant', completedAt);
      const path = join(dir, `${docIndex}.pdf`);
      await writeFile(path, sealed);
      const entry = zipEntryName(d.title, docIndex, taken);
      entries.push({ name: entry, path });
      documents.push({
        index: docIndex,
        title: d.title,
        entry,
        original: { storagePath: d.StoragePath, bytes: original.length, sha256: sha256(original) },
        final: { bytes: sealed.length, sha256: sha256(sealed) },
      });
    }
    const recorded = this.#store.evidence.auditTrail(id).map(({ seq: _seq, ...e }) => e);
    // The completion event is recorded with the change below; the trail shows it already, with the same time.
    const chain = chainEvents(t.id, [...recorded, { at: completedAt.toISOString(), type: 'completed' }]);
    const trail: AuditTrail = {
      format: AUDIT_TRAIL_FORMAT,
      transaction: { id: t.id, esignId: t.esignId, createdAt: t.createdAt, completedAt: completedAt.toISOString() },
      participants: t.body.participants.map((p) => ({
        id: p.id,
        name: `${p.firstName} ${p.lastName}`,
        email: p.email,
        authentication: authenticationSteps(p),
      })),
      documents,
      events: chain.events,
      chain: { algorithm: CHAIN_ALGORITHM, head: chain.head },
      seal: { subject: seal.certificate.subject, issuer: seal.certificate.issuer, sha256: seal.certificate.sha256 },
      timestampAuthority: {
        subject: seal.timestampAuthority.subject,
        issuer: seal.timestampAuthority.issuer,
        sha256: seal.timestampAuthority.sha256,
      },
    };
    const trailPath = join(dir, AUDIT_TRAIL_ENTRY);
    const trailBytes = Buffer.from(`${JSON.stringify(trail, null, 2)}\n`);
    await writeFile(trailPath, trailBytes);
    // The certificate carries the trail as an embedded file: sealing it seals the trail, byte for byte.
    const certificatePath = join(dir, COMPLETION_CERTIFICATE_ENTRY);
    const certificate = await renderCompletionCertificate(trail, trailBytes);
    await writeFile(certificatePath, await seal.seal(certificate, 'Certificate of completion', completedAt));
    entries.push({ name: COMPLETION_CERTIFICATE_ENTRY, path: certificatePath }, { name: AUDIT_TRAIL_ENTRY, path: trailPath });
    this.#markCompleted(t, await writeZip(entries, this.#store.completedZipPath(id)), completedAt);
  }

  #markCompleted(t: TransactionRow, zip: { bytes: number; sha256: string }, at = this.#options.now()): void {
    const completedAt = at.toISOString();
    this.#options.outbox.publish(t, ESIGN_COMPLETED_EVENT, () => {
      this.#store.completeTransaction(t.id, completedAt, zip);
      this.#store.evidence.audit(t.id, { at: completedAt, type: 'completed' });
    });
  }
}
