/**
 * The records retention and the legal holds register (workflows/records-retention.ts, workflows/legal-holds.ts) over
 * the explorer's archive. The activities are the real ones (activities/records.ts): the purge reads the register
 * through the lane's client (`listLegalHolds`), and the register's `applyLegalHolds` walks the store. The store is a
 * model that keeps the real one's contract (src/archive/store.ts): an archive's manifest, with the retention the
 * schedule gives it; a purge checked by `purgeAllowed` (refused before the retention ends or while a hold it is given
 * keeps it), leaving a tombstone; and, when the schedule says the store holds objects itself (S3 Object Lock), each
 * archive's object legal hold, which a purge lifts as the S3 store does once the register keeps nothing on it.
 *
 * The model's archive activity (explore/activities.ts) commits here as it commits to the provider model, and then
 * holds a new archive a standing hold covers, as the real one does.
 *
 * What must hold is in explore/records-checks.ts.
 */
import { Context } from '@temporalio/activity';
import { createRecordsActivities } from '../activities/records.js';
import { purgeAllowed, type ArchiveManifest, type ArchiveStore, type StoredArchive } from '../src/archive/store.js';
import type { HoldScope, LegalHold, PurgeInput, PurgeOutcome } from '../src/definitions/records.js';
import { holdsOn, retentionOf } from '../src/records/retention.js';

/** What a schedule's records are: how long its archives are kept, and whether the store holds objects itself. */
export interface RecordsSetup {
  retentionMs: number;
  holdsObjects: boolean;
  /**
   * Archives of earlier transactions of the schedule's referenceId (a bulk send: of its batch), there when it starts:
   * the i-th archived i half-retentions before, so that one comes due during the schedule, one at its start, and
   * older ones are past due (absent: none).
   */
  earlier?: number;
}

/** A hold the schedule asked the register for, and what became of it (sequence numbers order it against purges). */
export interface HoldMove {
  step: string;
  scope: HoldScope;
  target: string;
  /** When the placing was sent. */
  sentSeq: number;
  /** When the placing was answered (`ok`: the hold), or why not. */
  placed?: { outcome: 'ok'; hold: LegalHold; seq: number } | { outcome: 'error'; message: string };
  /** When its release was asked, and its answer. */
  release?: { askedSeq: number; outcome: 'pending' | 'ok' | 'error'; message?: string };
}

/** One attempt of `purgeIfDue`: which walk asked, the sequence numbers around it, and the server's clock when it was scheduled. */
export interface PurgeCall {
  workflowId: string;
  key: string;
  from: number;
  to: number;
  scheduledAt: number;
  outcome: PurgeOutcome['status'] | 'failed';
  /** This attempt destroyed the archive (a retry that finds its tombstone did not). */
  destroyed: boolean;
  /** `<runId>/<activityId>/<attempt>`: how the store knows which attempt purges. */
  attempt: string;
}

/** A retention walk the schedule started: its id, and its end. */
export interface RetentionWalk {
  workflowId: string;
  final: boolean;
  end:
    | { kind: 'result'; result: { checked: number; purged: number; held: number; purgedKeys: string[]; heldKeys: string[] } }
    | { kind: 'failed'; message: string }
    | { kind: 'stalled'; where: string };
}

interface ModelArchive {
  manifest: ArchiveManifest;
  objectHold: boolean;
  /** The object hold as the register's own walks (`applyLegalHolds`) last left it: the purge and the archive set it too. */
  registerHold: boolean;
  /** When it was committed, in the order of `tick`. */
  seq: number;
}

export interface ArchiveState {
  key: string;
  purged: boolean;
  objectHold: boolean;
  registerHold: boolean;
  seq: number;
  manifest: ArchiveManifest;
}

/** What the end of a records schedule found: the register's holds at rest, and each archive then and after the last walk. */
export interface RecordsAtRest {
  holds: LegalHold[];
  /**
   * Every hold and release was answered before the holds were read (else the holds and the store may be read
   * between a change and its application, and what must hold at rest is not judged).
   */
  settled: boolean;
  /** Why the register could not be read at rest, if it could not. */
  holdsError?: string;
  beforeLastWalk: ArchiveState[];
  afterLastWalk: { key: string; purged: boolean; objectHold: boolean }[];
}

export class RecordsModel {
  #seq = 0;
  readonly #archives = new Map<string, ModelArchive>();
  readonly moves: HoldMove[] = [];
  readonly purges: PurgeCall[] = [];
  readonly walks: RetentionWalk[] = [];
  atRest: RecordsAtRest | undefined;

  /** `readHolds`: the register's holds, as the worker reads them (src/client/records.ts `listLegalHolds`). */
  constructor(
    readonly setup: RecordsSetup,
    private readonly readHolds: () => Promise<LegalHold[]>,
  ) {}

  /** A point in the order of what the driver saw answered and what the activities did. */
  tick(): number {
    return ++this.#seq;
  }

  /** An archive the model's archive activity committed, at `at` on the server's clock. */
  committed(
    commit: { key: string; transactionId: string; referenceId: string; batchId?: string | undefined; sha256: string },
    at: number,
  ): void {
    if (this.#archives.has(commit.key)) return;
    const archivedAt = new Date(at).toISOString();
    this.#archives.set(commit.key, {
      objectHold: false,
      registerHold: false,
      seq: this.tick(),
      manifest: {
        referenceId: commit.referenceId,
        transactionId: commit.transactionId,
        esignId: commit.transactionId,
        ...(commit.batchId ? { batchId: commit.batchId } : {}),
        zip: { name: 'completed.zip', bytes: 1, sha256: commit.sha256 },
        documents: [],
        files: [],
        downloadedAt: archivedAt,
        archivedAt,
        retention: retentionOf(archivedAt, this.setup.retentionMs, 'transaction'),
      },
    });
  }

  /** The real archive activity's last step: a new archive a standing hold covers is held by the store too. */
  async holdIfCovered(key: string): Promise<void> {
    const archive = this.#archives.get(key);
    if (!this.setup.holdsObjects || !archive || archive.manifest.purged) return;
    if (holdsOn(archive.manifest, await this.readHolds()).length > 0) archive.objectHold = true;
  }

  archives(): ArchiveState[] {
    return [...this.#archives.entries()].map(([key, a]) => ({
      key,
      purged: a.manifest.purged !== undefined,
      objectHold: a.objectHold,
      registerHold: a.registerHold,
      seq: a.seq,
      manifest: a.manifest,
    }));
  }

  /** The archive store the real activities use: manifests only, with the real store's purge rule and object holds. */
  store(): ArchiveStore {
    const refuse = (): never => {
      throw new Error("the explorer's records model holds manifests only");
    };
    const archives = this.#archives;
    const setup = this.setup;
    const purges = this.purges;
    const store: ArchiveStore = {
      async find(key): Promise<StoredArchive | undefined> {
        const a = archives.get(key);
        return a ? { uri: `model://archive/${key}`, manifest: a.manifest } : undefined;
      },
      commit: async () => refuse(),
      scratchDir: async () => refuse(),
      read: async () => refuse(),
      commitRenewal: async () => refuse(),
      async purge(key, tombstone, holds) {
        if ((await purgeAllowed(store, key, tombstone, holds)) === 'purge') {
          archives.get(key)!.manifest = tombstone;
          const info = Context.current().info;
          const attempt = `${info.workflowExecution?.runId ?? ''}/${info.activityId}/${info.attempt}`;
          const call = purges.find((c) => c.attempt === attempt && c.key === key);
          if (call) call.destroyed = true;
        }
        // As the S3 store: an object hold the register no longer keeps (a release it raced) is lifted, or the
        // bucket would refuse the purge for good.
        archives.get(key)!.objectHold = false;
        archives.get(key)!.registerHold = false;
      },
      holdsObjects: setup.holdsObjects,
      async applyLegalHold(key, on) {
        const a = archives.get(key);
        if (!setup.holdsObjects || !a) return;
        a.objectHold = on;
        if (Context.current().info.activityType === 'applyLegalHolds') a.registerHold = on;
      },
      async *keys() {
        yield* [...archives.keys()].sort();
      },
    };
    return store;
  }

  /** The real `purgeIfDue` (each attempt recorded) and `applyLegalHolds`. */
  activities(): Pick<ReturnType<typeof createRecordsActivities>, 'purgeIfDue' | 'applyLegalHolds'> {
    const real = createRecordsActivities({ archive: this.store(), holds: this.readHolds });
    return {
      purgeIfDue: async (input: PurgeInput) => {
        const info = Context.current().info;
        const call: PurgeCall = {
          workflowId: info.workflowExecution?.workflowId ?? '',
          key: input.key,
          from: this.tick(),
          to: 0,
          scheduledAt: info.currentAttemptScheduledTimestampMs,
          outcome: 'failed',
          destroyed: false,
          attempt: `${info.workflowExecution?.runId ?? ''}/${info.activityId}/${info.attempt}`,
        };
        this.purges.push(call);
        try {
          const outcome = await real.purgeIfDue(input);
          call.outcome = outcome.status;
          return outcome;
        } finally {
          call.to = this.tick();
        }
      },
      applyLegalHolds: (input) => real.applyLegalHolds(input),
    };
  }
}
