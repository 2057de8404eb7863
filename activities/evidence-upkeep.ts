import { createHash, randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { whileHeartbeating } from './support/heartbeat.js';
import type { ArchiveManifest, ArchiveStore, EvidenceRenewal } from '../src/archive/store.js';
import { holdWhole, verifyZip } from '../src/archive/zip-verify.js';
import type { ArchivePage, ArchiveUpkeepOutcome, RenewArchiveInput } from '../src/definitions/evidence-upkeep.js';
import { renewalVerdict, renewEvidence, RenewalRefused, type RenewalPolicy, type RenewalSources } from '../src/evidence/renewal.js';
import { FailureType } from '../src/failures.js';

export interface EvidenceUpkeepDeps {
  archive: ArchiveStore;
  /** Absent when the worker has no time-stamping authority configured: the upkeep then refuses to run. */
  upkeep?: { sources: RenewalSources; policy: RenewalPolicy };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export function createEvidenceUpkeepActivities(deps: EvidenceUpkeepDeps) {
  async function renew(input: RenewArchiveInput, progress: { entry: string }): Promise<ArchiveUpkeepOutcome> {
    const upkeep = deps.upkeep;
    if (!upkeep) {
      throw ApplicationFailure.nonRetryable(
        'the evidence upkeep needs a time-stamping authority: set ESIGN_EVIDENCE_TSA_URL on the worker',
        FailureType.InvalidInput,
      );
    }
    const stored = await deps.archive.find(input.key);
    if (!stored) throw ApplicationFailure.nonRetryable(`no archive under ${input.key}`, FailureType.InvalidInput);
    const { manifest } = stored;
    const sealed = sealedEntries(manifest);
    // Purged, or due to be: nothing to keep renewing (docs/records.md).
    const due = manifest.purged !== undefined || (manifest.retention !== undefined && input.asOf >= manifest.retention.until);
    if (sealed.length === 0 || due) return { key: input.key, status: 'skipped', documents: [] };

    // Not earlier than the workflow's clock (a test's simulated years), nor than this machine's (a late retry).
    const at = new Date(Math.max(Date.parse(input.asOf), Date.now()));
    const current = await currentVersions(deps.archive, input.key, manifest, sealed);
    const outcome: ArchiveUpkeepOutcome = { key: input.key, status: 'current', documents: [] };
    const renewedFiles: { entry: string; pdf: Buffer; previous: string; time: string; expiresAt: string }[] = [];
    let reason: EvidenceRenewal['reason'] = 'expiring';
    for (const entry of sealed) {
      progress.entry = entry;
      const pdf = current.get(entry)!;
      const verdict = await renewalVerdict(pdf, upkeep.policy, at);
      if (verdict.due === 'lapsed') {
        outcome.documents.push({
          entry,
          status: 'lapsed',
          evidenceExpiresAt: verdict.check.evidenceExpiresAt,
          problems: verdict.problems,
        });
        continue;
      }
      if (!verdict.due) {
        outcome.documents.push({ entry, status: 'current', evidenceExpiresAt: verdict.check.evidenceExpiresAt });
        continue;
      }
      if (verdict.reason === 'requested') reason = 'requested';
      try {
        const renewed = await renewEvidence(pdf, upkeep.sources, upkeep.policy, at);
        renewedFiles.push({
          entry,
          pdf: renewed.pdf,
          previous: sha256(pdf),
          time: renewed.check.archiveTimestamps.at(-1)!,
          expiresAt: renewed.check.evidenceExpiresAt!,
        });
        outcome.documents.push({ entry, status: 'renewed', evidenceExpiresAt: renewed.check.evidenceExpiresAt });
      } catch (err) {
        // A time-stamping authority that is down is worth another attempt; a renewal that does not verify is not.
        if (err instanceof RenewalRefused && /could not be made/.test(err.message)) {
          throw ApplicationFailure.retryable(`${input.key} ${entry}: ${err.message}`, FailureType.ProviderUnavailable);
        }
        if (!(err instanceof RenewalRefused)) throw err;
        // Kept out of the archive, reported, and the walk goes on: one archive must not stop the others' upkeep.
        outcome.documents.push({ entry, status: 'refused', evidenceExpiresAt: verdict.check.evidenceExpiresAt, problems: [err.message] });
      }
    }
    if (renewedFiles.length > 0) {
      const ctx = Context.current();
      // An attempt the server already gave up on (a missed heartbeat) must not commit over the next one.
      ctx.cancellationSignal.throwIfAborted();
      const id = (manifest.renewals?.length ?? 0) + 1;
      const dir = `renewals/${id}/${ctx.info.attempt}`;
      const renewal: EvidenceRenewal = {
        id,
        asOf: at.toISOString(),
        reason,
        documents: renewedFiles.map((f) => ({
          entry: f.entry,
          file: `${dir}/${f.entry}`,
          bytes: f.pdf.length,
          sha256: sha256(f.pdf),
          extends: f.previous,
          timestampedAt: f.time,
          evidenceExpiresAt: f.expiresAt,
        })),
      };
      await deps.archive.commitRenewal(
        input.key,
        { id, files: renewedFiles.map((f) => ({ name: `${dir}/${f.entry}`, bytes: f.pdf })) },
        { ...manifest, renewals: [...(manifest.renewals ?? []), renewal] },
      );
      outcome.status = 'renewed';
      outcome.renewalId = id;
      log.info('archive evidence renewed', { key: input.key, renewal: id, documents: renewedFiles.length });
    }
    // Lapsed outranks refused: it needs an operator whatever the next renewal does.
    for (const [status, why] of [
      ['refused', 'archive evidence due for renewal, but the renewal did not verify: kept as it was'],
      ['lapsed', 'archive evidence no longer holds: a renewal cannot help, the archive needs an operator'],
    ] as const) {
      const problems = outcome.documents.filter((d) => d.status === status);
      if (problems.length === 0) continue;
      outcome.status = status;
      log.error(why, { key: input.key, problems: problems.map((d) => `${d.entry}: ${d.problems?.join('; ') ?? ''}`).join(' | ') });
    }
    return outcome;
  }

  return {
    /** One page of archive keys after `after`, in key order. */
    async listArchivesForUpkeep(input: { after?: string; limit: number }): Promise<ArchivePage> {
      const keys: string[] = [];
      for await (const key of deps.archive.keys()) {
        if (input.after !== undefined && key <= input.after) continue;
        if (keys.length === input.limit) return { keys, next: keys.at(-1)! };
        keys.push(key);
      }
      return { keys, next: null };
    },

    /**
     * Renews what is due in one archive: each sealed PDF (the documents and the certificate of completion) is
     * judged at the upkeep's time in its newest version; those whose newest time-stamp's chain ends within the
     * horizon get validation data and a document time-stamp, are checked again, and are committed together as
     * the archive's next renewal. Idempotent: a retry after the commit finds them current.
     */
    async renewArchiveEvidence(input: RenewArchiveInput): Promise<ArchiveUpkeepOutcome> {
      // Heartbeats cover the reads, the renewals and the commit, so an attempt the server gave up on is noticed
      // (and cancelled before it commits); its files are named for the attempt, so they never meet another's.
      const progress = { key: input.key, entry: '' };
      return whileHeartbeating(
        () => renew(input, progress),
        () => progress,
      );
    },
  };
}

/** The ZIP entries whose seal the archive verified: the documents and a sealed certificate of completion. */
function sealedEntries(manifest: ArchiveManifest): string[] {
  const evidence = manifest.evidence;
  if (!evidence) return [];
  const entries = evidence.documents.filter((d) => d.signature.result === 'valid').map((d) => d.entry);
  if (evidence.certificateOfCompletion?.signature.result === 'valid') entries.push(evidence.certificateOfCompletion.entry);
  return entries;
}

/**
 * Each entry's newest version: the last renewal's copy, else the ZIP's entry. Every byte is checked against the
 * hash the manifest recorded for it: a stored copy that changed is refused, never renewed.
 */
async function currentVersions(
  archive: ArchiveStore,
  key: string,
  manifest: ArchiveManifest,
  entries: readonly string[],
): Promise<Map<string, Buffer>> {
  const versions = new Map<string, Buffer>();
  const fromZip: string[] = [];
  for (const entry of entries) {
    const last = manifest.renewals
      ?.flatMap((r) => r.documents)
      .filter((d) => d.entry === entry)
      .at(-1);
    if (!last) {
      fromZip.push(entry);
      continue;
    }
    const bytes = await archive.read(key, last.file);
    if (sha256(bytes) !== last.sha256) {
      throw ApplicationFailure.nonRetryable(`${key}/${last.file} is not the copy its manifest records`, FailureType.ArchiveInvalid);
    }
    versions.set(entry, bytes);
  }
  if (fromZip.length === 0) return versions;
  const zip = await archive.read(key, 'completed.zip');
  if (sha256(zip) !== manifest.zip.sha256) {
    throw ApplicationFailure.nonRetryable(`${key}/completed.zip is not the ZIP its manifest records`, FailureType.ArchiveInvalid);
  }
  const scratch = join(await archive.scratchDir(), `upkeep.${randomUUID()}.zip`);
  try {
    await writeFile(scratch, zip);
    await verifyZip(scratch, undefined, {
      open: (name) => (fromZip.includes(name) ? holdWhole(async (entry, content) => void versions.set(entry.name, content)) : undefined),
    });
  } finally {
    await rm(scratch, { force: true });
  }
  for (const entry of fromZip) {
    if (!versions.has(entry)) throw ApplicationFailure.nonRetryable(`${key}/completed.zip holds no ${entry}`, FailureType.ArchiveInvalid);
  }
  return versions;
}
