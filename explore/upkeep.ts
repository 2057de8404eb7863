/**
 * The evidence upkeep (workflows/evidence-upkeep.ts) over the explorer's archive: the archives the schedule's
 * transactions and late completions commit (the provider model's `archives`), beside others already there. The walk's
 * listing is the real activity (`listArchivesForUpkeep`, activities/evidence-upkeep.ts) over the model's keys; the
 * renewal of one archive (`renewArchiveEvidence`) is modelled, since the real one verifies PAdES signatures and asks a
 * time-stamping authority and revocation services. The model keeps the real activity's contract:
 *
 * - an archive without a verified seal is `skipped`; one whose evidence no longer holds is `lapsed` (nothing written);
 * - one whose stored copy is not what its manifest records fails for good (ArchiveInvalid), and the walk counts it
 *   `refused`;
 * - one due is renewed: a renewal numbered after the last is appended (each document extending the version before),
 *   committed once; a retry after the commit finds it current. An authority that is down fails the attempt
 *   (retried); a renewal that does not verify is kept out (`refused`, nothing written);
 * - `completed.zip` is never touched.
 *
 * Every archive's evidence is what the schedule's step says, by the archive's place in the order archives came in.
 */
import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { createEvidenceUpkeepActivities } from '../activities/evidence-upkeep.js';
import type { ArchiveStore, StoredArchive } from '../src/archive/store.js';
import type { ArchivePage, ArchiveUpkeepOutcome, RenewArchiveInput } from '../src/definitions/evidence-upkeep.js';
import { FailureType } from '../src/failures.js';
import type { ProviderModel } from './provider-model.js';

/** What an archive's evidence is when the upkeep looks at it. */
export type UpkeepEvidence = 'current' | 'due' | 'lapsed' | 'unsealed' | 'tampered';
/** The time-stamping authority a renewal asks: answering, down for an archive's first two attempts, or giving a renewal that does not verify. */
export type UpkeepAuthority = 'ok' | 'down' | 'refuses';

/** The sealed PDFs of an archive: the document and the certificate of completion. */
const ENTRIES = ['Contract.pdf', 'certificate-of-completion.pdf'];

export interface ModelRenewal {
  id: number;
  asOf: string;
  documents: { entry: string; sha256: string; extends: string }[];
}

export interface UpkeepArchive {
  key: string;
  /** The ZIP's hash when it was committed, and now. */
  zipSha256: string;
  evidence: UpkeepEvidence;
  renewals: ModelRenewal[];
}

/** One attempt of `renewArchiveEvidence`: which walk (its run) and which call asked, and what it answered. */
export interface RenewalCall {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
  key: string;
  outcome: ArchiveUpkeepOutcome['status'] | 'failed';
}

export class UpkeepModel {
  /** Archives of other transactions, there before the schedule's (their keys spread among the schedule's). */
  readonly others: string[] = [];
  evidence: readonly UpkeepEvidence[] = ['current'];
  authority: UpkeepAuthority = 'ok';
  readonly calls: RenewalCall[] = [];
  readonly #archives = new Map<string, UpkeepArchive>();

  constructor(private readonly model: ProviderModel) {}

  /** Adds `count` archives of other transactions (once per schedule: a later upkeep step walks the same archive). */
  addOthers(count: number): void {
    for (let i = this.others.length; i < count; i++) {
      const key = `${((i + 1) * 2654435761).toString(16).padStart(8, '0').slice(-8)}-0000-4000-8000-${String(i).padStart(12, '0')}`;
      this.others.push(key);
      this.#add(key, createHash('sha256').update(key).digest('hex'));
    }
  }

  /** An archive of another transaction, there before the schedule's (the records' earlier archives, explore/records.ts). */
  addArchive(key: string, zipSha256: string): void {
    if (!this.#archives.has(key)) this.#add(key, zipSha256);
  }

  /** Every archive, in the order they came: the others, then the schedule's as committed. */
  archives(): UpkeepArchive[] {
    for (const a of this.model.archives) if (!this.#archives.has(a.key)) this.#add(a.key, a.sha256);
    return [...this.#archives.values()];
  }

  /** The keys of the committed archives, in the archive store's order (JavaScript string order). */
  keys(): string[] {
    return this.archives()
      .map((a) => a.key)
      .sort();
  }

  #add(key: string, zipSha256: string): void {
    const evidence = this.evidence[this.#archives.size % this.evidence.length] ?? 'current';
    this.#archives.set(key, { key, zipSha256, evidence, renewals: [] });
  }

  /** The archive store the real listing reads: keys only (the model renews without reading files). */
  store(): ArchiveStore {
    const refuse = (): never => {
      throw new Error("the explorer's archive model holds keys only");
    };
    const keys = () => this.keys();
    return {
      find: async (): Promise<StoredArchive | undefined> => refuse(),
      commit: async () => refuse(),
      scratchDir: async () => refuse(),
      read: async () => refuse(),
      commitRenewal: async () => refuse(),
      purge: async () => refuse(),
      holdsObjects: false,
      applyLegalHold: async () => refuse(),
      async *keys() {
        yield* keys();
      },
    };
  }

  /** `listArchivesForUpkeep` (the real one) and the modelled `renewArchiveEvidence`. */
  activities(): Pick<ReturnType<typeof createEvidenceUpkeepActivities>, 'listArchivesForUpkeep' | 'renewArchiveEvidence'> {
    const real = createEvidenceUpkeepActivities({ archive: this.store() });
    return {
      listArchivesForUpkeep: (input: { after?: string; limit: number }): Promise<ArchivePage> => real.listArchivesForUpkeep(input),
      renewArchiveEvidence: async (input: RenewArchiveInput) => this.#renew(input),
    };
  }

  async #renew(input: RenewArchiveInput): Promise<ArchiveUpkeepOutcome> {
    const info = Context.current().info;
    const call = (outcome: RenewalCall['outcome']) =>
      this.calls.push({
        workflowId: info.workflowExecution?.workflowId ?? '',
        runId: info.workflowExecution?.runId ?? '',
        activityId: info.activityId,
        attempt: info.attempt,
        key: input.key,
        outcome,
      });
    const archive = this.archives().find((a) => a.key === input.key);
    if (!archive) {
      call('failed');
      throw ApplicationFailure.nonRetryable(`no archive under ${input.key}`, FailureType.InvalidInput);
    }
    const answer = (status: ArchiveUpkeepOutcome['status'], renewalId?: number): ArchiveUpkeepOutcome => {
      call(status);
      return { key: input.key, status, ...(renewalId !== undefined ? { renewalId } : {}), documents: [] };
    };
    switch (archive.evidence) {
      case 'unsealed':
        return answer('skipped');
      case 'tampered':
        call('failed');
        throw ApplicationFailure.nonRetryable(`${input.key}/completed.zip is not the ZIP its manifest records`, FailureType.ArchiveInvalid);
      case 'lapsed':
        return answer('lapsed');
      case 'current':
        return answer('current');
      case 'due':
        // Renewed once, its evidence lasts: a retry after the commit finds it current.
        if (archive.renewals.length > 0) return answer('current');
        if (this.authority === 'down' && info.attempt <= 2) {
          call('failed');
          throw ApplicationFailure.retryable(
            `${input.key}: the renewal could not be made: the authority is down`,
            FailureType.ProviderUnavailable,
          );
        }
        if (this.authority === 'refuses') return answer('refused');
        // An attempt the server already gave up on must not commit over the next one.
        Context.current().cancellationSignal.throwIfAborted();
        archive.renewals.push({
          id: archive.renewals.length + 1,
          asOf: input.asOf,
          documents: ENTRIES.map((entry) => ({
            entry,
            extends: createHash('sha256').update(`${archive.zipSha256}/${entry}`).digest('hex'),
            sha256: createHash('sha256')
              .update(`${archive.key}/${entry}/${archive.renewals.length + 1}`)
              .digest('hex'),
          })),
        });
        return answer('renewed', archive.renewals.length);
    }
  }
}
