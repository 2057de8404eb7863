import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApprovalRecord } from '../src/definitions/approvals.js';
import { DEFAULT_RETENTION, holdsOn, retentionOf } from '../src/records/retention.js';
import type { LegalHold } from '../src/definitions/records.js';
import type { CorrectionRecord } from '../src/definitions/corrections.js';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { EsignClient } from '../src/esign/client.js';
import { writeHashed } from '../src/util/streams.js';
import type { ArchiveResult } from '../src/definitions/transaction.js';
import type { ArchiveManifest, ArchiveStore } from '../src/archive/store.js';
import { FailureType } from '../src/failures.js';
import { callProvider, whileHeartbeating } from './support/heartbeat.js';
import { DEFAULT_ZIP_LIMITS, UnsafeZipError, verifyZip, type ZipLimits } from '../src/archive/zip-verify.js';
import { StreamingZipVerifier } from '../src/archive/zip-stream.js';
import { EvidenceRejected, evidenceCheck, NO_EVIDENCE_POLICY, type EvidencePolicy } from '../src/archive/evidence.js';

export interface ArchiveDeps {
  client: EsignClient;
  archive: ArchiveStore;
  zipLimits?: ZipLimits;
  /** The retention of an archive whose transaction names none (docs/records.md). */
  retention?: string;
  /** What the completed ZIP must prove before it is archived (seals, trust anchors, certificate of completion). */
  evidence?: EvidencePolicy;
  /** The legal holds register's answer: an archive a hold covers is held by the store too, where it can (S3 Object Lock). */
  holds?: () => Promise<LegalHold[]>;
}

export interface ArchiveInput {
  referenceId: string;
  transactionId: string;
  esignId: string;
  /** In order; `sha256` is what the upload activity computed (absent for documents uploaded by the caller, and in histories from before it). */
  documents: { title: string; StoragePath: string; sha256?: string }[];
  /** The participants the workflow created: the audit trail must list exactly these (absent for a late completion). */
  participantIds?: string[];
  archivePrefix?: string;
  /** What was asked of the provider in flight (corrections), kept in the manifest beside the provider's audit trail. */
  corrections?: CorrectionRecord[];
  /** Its approvers' answers before it was sent, kept in the manifest as the corrections are. */
  approvals?: ApprovalRecord[];
  /** The bulk send the transaction belongs to: kept in the manifest, where a hold on the batch finds it. */
  batchId?: string;
  /** How long the archive is kept, as the transaction's input names it (else the worker's default). */
  retention?: string | number;
}

export function createArchiveActivities(deps: ArchiveDeps) {
  /**
   * Holds a new archive that a standing hold covers, as the register did the archives it found when the hold was
   * placed. Read after the commit: a hold placed before it is seen here, and one placed after finds the archive.
   */
  async function holdIfCovered(key: string, manifest: ArchiveManifest): Promise<void> {
    if (!deps.archive.holdsObjects || !deps.holds || manifest.purged) return;
    if (holdsOn(manifest, await deps.holds()).length > 0) await deps.archive.applyLegalHold(key, true);
  }

  return {
    /**
     * Downloads the completed ZIP as a stream to a scratch file (hashing it on
     * the way), verifies it, and commits it with its manifest. Idempotent: an
     * archive already committed for the transaction is returned as it is.
     */
    async archiveCompletedDocuments(input: ArchiveInput): Promise<ArchiveResult> {
      const ctx = Context.current();
      const key = input.archivePrefix ? `${input.archivePrefix}/${input.transactionId}` : input.transactionId;
      const existing = await deps.archive.find(key);
      if (existing) {
        // A retry of an attempt that committed and then failed before the hold.
        await holdIfCovered(key, existing.manifest);
        return toResult(existing.uri, existing.manifest);
      }

      // Heartbeats cover the download, the verification and the commit: a killed worker is noticed in seconds.
      const progress = { bytes: 0 };
      return whileHeartbeating(
        async () => {
          const scratch = join(await deps.archive.scratchDir(), `${input.transactionId}.${randomUUID()}.zip`);
          try {
            const download = await callProvider(() =>
              deps.client.downloadCompletedDocuments(input.transactionId, { signal: ctx.cancellationSignal }),
            );
            const downloadedAt = new Date().toISOString();
            const limits = deps.zipLimits ?? DEFAULT_ZIP_LIMITS;
            const policy = deps.evidence ?? NO_EVIDENCE_POLICY;
            // Verified while it downloads: entries, CRC-32, SHA-256 and seals in the same pass as the write.
            let check = evidenceCheck(input, policy);
            const streaming = new StreamingZipVerifier(limits, check.inspector);
            let written;
            try {
              written = await writeHashed(download.body, scratch, {
                signal: ctx.cancellationSignal,
                onProgress: (bytes) => (progress.bytes = bytes),
                observe: (chunk) => streaming.update(chunk),
              });
            } catch (err) {
              // Refused while it downloaded (over its limits, or unsafe in itself): as if refused once on disk.
              if (err instanceof UnsafeZipError) throw zipRefused(err, ctx.info.attempt);
              throw ApplicationFailure.retryable(
                `download of the completed ZIP broke off: ${(err as Error).message}`,
                FailureType.ArchiveIncomplete,
              );
            }
            if (download.contentLength !== undefined && written.bytes !== download.contentLength) {
              throw ApplicationFailure.retryable(
                `completed ZIP is ${written.bytes} bytes but the provider announced ${download.contentLength}`,
                FailureType.ArchiveIncomplete,
              );
            }
            let files;
            let evidence;
            try {
              const verdict = await streaming.finish(scratch);
              if ('entries' in verdict) files = verdict.entries;
              else {
                // A layout the stream cannot follow (a deflated entry whose sizes come after it): walk the file again, byte by byte.
                log.info('completed ZIP verified in a second pass', { transactionId: input.transactionId, why: verdict.fallback });
                check = evidenceCheck(input, policy);
                files = await verifyZip(scratch, limits, check.inspector);
              }
              evidence = check.conclude(files);
            } catch (err) {
              if (err instanceof UnsafeZipError) throw zipRefused(err, ctx.info.attempt);
              if (err instanceof EvidenceRejected) {
                throw ApplicationFailure.nonRetryable(`completed ZIP rejected: ${err.message}`, FailureType.ArchiveInvalid);
              }
              throw err;
            }
            const unverified = [...evidence.documents.map((d) => d.signature), evidence.certificateOfCompletion?.signature].filter(
              (s) => s?.result === 'invalid',
            );
            if (unverified.length > 0) {
              log.warn('completed documents archived with signatures that did not verify (policy: warn)', {
                transactionId: input.transactionId,
                problems: unverified.flatMap((s) => s!.problems),
              });
            }
            const archivedAt = new Date().toISOString();
            const stored = await deps.archive.commit(key, scratch, {
              referenceId: input.referenceId,
              transactionId: input.transactionId,
              esignId: input.esignId,
              zip: { name: 'completed.zip', bytes: written.bytes, sha256: written.sha256 },
              documents: input.documents,
              files,
              evidence,
              ...(input.corrections?.length ? { corrections: input.corrections } : {}),
              ...(input.approvals?.length ? { approvals: input.approvals } : {}),
              ...(input.batchId ? { batchId: input.batchId } : {}),
              downloadedAt,
              archivedAt,
              retention:
                input.retention !== undefined
                  ? retentionOf(archivedAt, input.retention, 'transaction')
                  : retentionOf(archivedAt, deps.retention ?? DEFAULT_RETENTION, 'worker'),
            });
            await holdIfCovered(key, stored.manifest);
            log.info('completed documents archived', { transactionId: input.transactionId, uri: stored.uri, bytes: written.bytes });
            ctx.metricMeter.createCounter('esign_archive_bytes', 'bytes', 'Bytes of completed ZIPs archived').add(written.bytes);
            return toResult(stored.uri, stored.manifest);
          } finally {
            await rm(scratch, { force: true });
          }
        },
        () => progress,
      );
    },
  };
}

function toResult(uri: string, manifest: ArchiveManifest): ArchiveResult {
  return {
    uri,
    sha256: manifest.zip.sha256,
    bytes: manifest.zip.bytes,
    files: manifest.files,
    ...(manifest.evidence ? { evidence: manifest.evidence } : {}),
  };
}

/** A ZIP refused: a damaged one (a truncated body without Content-Length shows so) is worth another download or two. */
function zipRefused(err: UnsafeZipError, attempt: number): ApplicationFailure {
  const message = `completed ZIP rejected: ${err.message}`;
  return err.damaged && attempt < 3
    ? ApplicationFailure.retryable(message, FailureType.ArchiveIncomplete)
    : ApplicationFailure.nonRetryable(message, FailureType.ArchiveInvalid);
}
