/**
 * A schedule: one transaction's setup, the messages and world events that
 * reach it at given points of simulated time, the fate of every webhook the
 * provider sends, the planned activity faults, and what happens after the
 * workflow ended. It is plain JSON: a failing seed is printed as its shrunk
 * schedule, saved under explore/regressions/, and replayed as it is.
 *
 * Steps never assume a state: a step the model cannot take (a signature on a
 * draft) or a message the workflow refuses is part of the exploration, so
 * the shrinker can drop any step without making the rest meaningless.
 */
import { seededRandom } from '../src/util/seeded-random.js';
import { CORRECTION_KINDS, type CorrectionKind } from '../src/definitions/corrections.js';
import { FAULTABLE, type PlannedFault } from './activities.js';
import type { ModelOperation } from './provider-model.js';
import type { UpkeepAuthority, UpkeepEvidence } from './upkeep.js';
import type { RecordsSetup } from './records.js';
import type { HoldScope } from '../src/definitions/records.js';

/**
 * What a schedule drives. `transaction` (or none, in the files written before there were kinds): one transaction
 * and its late path. `reuse`: several transactions with one referenceId, one after the other ended, with their
 * event log (the integrator's endpoint down, an event failed, the operator's redelivery, the log closed by its
 * retention and started again), the late path's refused ZIP and the operator's retries, and the provider's
 * outages and final answers (4xx, 404 after a deletion) outside the reconciliation poll. `bulk`: a bulk send of a few
 * rows (workflows/bulk-send.ts), each row a transaction, with cancels at every phase, the provider's 429s, a worker
 * that dies in the middle of a page, signers and faults.
 */
export type ScheduleKind = 'transaction' | 'reuse' | 'bulk';

/** One copy of a webhook: straight to the transaction workflow (as a hand-sent signal) or through the bridge's inbox; `afterMs` late. */
export interface WebhookCopy {
  via: 'direct' | 'bridge';
  afterMs: number;
}
/** What becomes of one webhook: its copies (none: lost; two: duplicated; late ones overtake later ones, reordering them). */
export type Delivery = WebhookCopy[];

export type Step =
  /** The `issueSigningUrl` update, for one participant. */
  | { kind: 'signingUrl'; participant: number }
  /** The `replaceTransaction` update (send a draft, or make it one again). */
  | { kind: 'replace'; status: 'draft' | 'esign_pending' }
  /** The `cancel` update. */
  | { kind: 'cancel' }
  /**
   * The `correctTransaction` update (workflows/transaction/correcting.ts) of `participant` (by position in the
   * provider's record when it is sent); `deadline`: to `deadlineMs` after the step (negative: in the past).
   */
  | { kind: 'correct'; correction: CorrectionKind; participant: number; deadlineMs: number }
  /** The `status` query (on a worker whose cache was emptied, it replays the history). */
  | { kind: 'query' }
  /**
   * An approver's `approve` or `reject` update (workflows/transaction/approving.ts): `approver` by position in the
   * setup's approvers; at or past their count, someone the transaction does not name.
   */
  | { kind: 'approve'; approver: number }
  | { kind: 'reject'; approver: number }
  /** A participant opens the signing page; `webhooks[i]` is the fate of the i-th webhook the move sends. */
  | { kind: 'view'; participant: number; webhooks: Delivery[]; row?: number }
  /** A participant signs; the last signature also sends `esign-completed` (its fate is `webhooks[1]`). `row`: of a bulk row's transaction. */
  | { kind: 'sign'; participant: number; webhooks: Delivery[]; row?: number }
  | { kind: 'decline'; participant: number; webhooks: Delivery[]; row?: number }
  /** The provider ends the transaction itself. */
  | { kind: 'providerEnd'; status: 'cancelled' | 'expired' | 'deleted'; webhooks: Delivery[] }
  /** A webhook naming another transaction, sent to this workflow (it must be counted as rejected and ignored). */
  | { kind: 'strayWebhook' }
  /** The worker shuts down and a new one starts with an empty cache. */
  | { kind: 'restartWorker' }
  /** ZIPs the provider makes from now on are refused by the archive (ArchiveInvalid) until fixed. */
  | { kind: 'badZip' }
  /** An operator fixes what made the archive refuse the ZIP and asks the workflow to archive again (`retryArchive`). */
  | { kind: 'fixZip' }
  /** After the workflow ended: someone sends the withdrawn transaction again through the provider's API. */
  | { kind: 'resend' }
  /** The integrator's endpoint answers 503 to every event until `endpointUp` (the log spends its budget, marks events failed). */
  | { kind: 'endpointDown' }
  | { kind: 'endpointUp' }
  /** An operator sends the events after sequence `after` again (src/client/event-log.ts `redeliverEsignEvents`). */
  | { kind: 'redeliver'; after: number }
  /** One of the provider's endpoints answers `status` (503, 429: retried; 4xx: final) until `providerUp`. */
  | { kind: 'providerDown'; operation: ModelOperation; status: number }
  | { kind: 'providerUp'; operation: ModelOperation }
  /** The provider forgets a transaction it deleted: 404 from then on. */
  | { kind: 'purge' }
  /** An operator asks `retryEsignArchive` (src/client) without having fixed anything. */
  | { kind: 'operatorRetry' }
  /** An operator cancels the bulk send (`cancelBatch`, src/client/bulk.ts). */
  | { kind: 'bulkCancel' }
  /**
   * A new Worker Deployment version becomes current. The pinned runs (the transaction; a bulk send and its rows) are
   * told their target version changed from their next task on (explore/server-hints.ts), and must move to it at their
   * continue-as-new. `restart`: the auto-upgrade workflows (inbox, late completion, event log, upkeep) move to the new
   * version's worker at their next task, which has none of them cached (a worker restart).
   */
  | { kind: 'deploy'; restart: boolean }
  /** The server suggests continue-as-new to a workflow's current run (its history grew past the server's limit) from its next task on. */
  | { kind: 'suggestContinueAsNew'; workflow: 'transaction' | 'eventLog' | 'batch' }
  /**
   * The evidence upkeep walks the archive (workflows/evidence-upkeep.ts, explore/upkeep.ts): the schedule's archives and
   * `others` already there; each archive's evidence is `evidence[i]` by the order archives came in, cyclically; the
   * time-stamping authority is `authority`. `suggestContinueAsNew`: the server suggests it to the walk's first run.
   * In the late moves, `delayMs` after its turn.
   */
  | {
      kind: 'upkeep';
      others: number;
      evidence: UpkeepEvidence[];
      authority: UpkeepAuthority;
      suggestContinueAsNew: boolean;
      delayMs?: number;
    }
  /** An operator terminates a workflow (`temporal workflow terminate`): the event log, or the transaction's late completion. */
  | { kind: 'terminate'; workflow: 'eventLog' | 'lateCompletion'; delayMs?: number }
  /** The provider sends a completed transaction's completion webhook once more, through the bridge. */
  | { kind: 'completionAgain'; delayMs?: number }
  /**
   * Records (explore/records.ts): an operator places a legal hold (`placeLegalHold`, src/client/records.ts) on the
   * transaction, its referenceId or its bulk send; `suggest`: the server first suggests continue-as-new to the
   * register's run. A release lets go of the oldest hold the schedule placed that stands. A retention walk
   * (workflows/records-retention.ts) purges what its retention and the holds allow.
   */
  | { kind: 'hold'; scope: HoldScope; suggest: boolean; delayMs?: number }
  | { kind: 'releaseHold'; delayMs?: number }
  | { kind: 'retention'; delayMs?: number };

export type TimedStep = Step & { /** Simulated milliseconds after the start. */ at: number };

export interface ScheduleSetup {
  participants: number;
  status: 'draft' | 'esign_pending';
  signingDeadlineMs: number;
  reconcileIntervalMs: number;
  reconcileMaxIntervalMs: number;
  callback: boolean;
  reminders?: { firstAfterMs: number; everyMs: number; maxCount: number };
  /** Start with a signing-URL update (update-with-start). */
  signingUrlWithStart: boolean;
  archivePrefix?: string;
  /** The history bound of one run (continue-as-new), when the workflow takes one. */
  maxHistoryEvents?: number;
  /** Approvers to approve it before it is sent (explore/input.ts names them `approver-1`, …). */
  approval?: ApprovalSetup;
}

/** The input's `approval`: how many approvers, the quorum (absent: all of them), their deadline and reminders. */
export interface ApprovalSetup {
  approvers: number;
  quorum?: number;
  /** From the start; before the signing deadline. */
  deadlineMs: number;
  reminders?: { firstAfterMs: number; everyMs: number; maxCount: number };
}

/** A later transaction with the schedule's referenceId, started `gapMs` after the one before ended (and its late moves). */
export interface NextTransaction {
  gapMs: number;
  setup: ScheduleSetup;
  steps: TimedStep[];
  late: Step[];
}

export interface Schedule {
  seed: number;
  /** Absent: `transaction` (every schedule saved before kinds existed). */
  kind?: ScheduleKind;
  setup: ScheduleSetup;
  steps: TimedStep[];
  faults: PlannedFault[];
  /** After the workflow ended and its end was checked: moves of the world the late path must handle. */
  late: Step[];
  /** `reuse`: the transactions that follow with the same referenceId. */
  next?: NextTransaction[];
  /** `bulk`: the batch (its rows' transactions take `setup`'s deadline and poll interval). */
  bulk?: BulkSetup;
  /** With holds and retention walks among its steps: its archives' retention and store (explore/records.ts). */
  records?: RecordsSetup;
}

export interface BulkSetup {
  /** Rows of the CSV (one page). */
  rows: number;
  maxInFlight: number;
  /** Calls of `startBatchPage` whose worker dies after starting `rows` rows of the page. */
  crashMidPage: { call: number; rows: number }[];
}

/** What the generator may use: it widens as the workflow gains the means (the history bound, `retryArchive`). */
export interface GeneratorFeatures {
  maxHistoryEvents: boolean;
  /** Invalid ZIPs (only worth generating when the workflow can recover from them). */
  badZips: boolean;
  /** Worker restarts (explore/sticky-queues.ts says what a restart needs on the test server). */
  restarts?: boolean;
  /**
   * The share of transactions whose input names approvers, answered by `approve` and `reject` (0 or absent: none, nor
   * any answer; only when the workflow takes them).
   */
  approvals?: number;
  /** The share of seeds that are `reuse` schedules (0: all are `transaction`). */
  reuse?: number;
  /** The share of seeds that are `bulk` schedules. */
  bulk?: number;
  /**
   * How often the operator's and the server's moves (deploys, continue-as-new suggested, upkeep walks, terminations)
   * are drawn, as a multiple of their shares (`OPERATIONS`): 0 or absent, never.
   */
  operations?: number;
  /** The share of schedules with legal holds and retention walks among their moves (0 or absent: none). */
  records?: number;
  /** The share of schedules with writes to the provider that get no answer and land later (`late` faults). */
  lateWrites?: number;
  /** The share of schedules with activities that take seconds of the workflow's time (`slow` faults). */
  slowActivities?: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Messages and moves that contend: a step generated to race another picks its kind from these. */
const RIVALS: Partial<Record<Step['kind'], readonly Step['kind'][]>> = {
  replace: ['cancel', 'sign', 'decline', 'replace', 'providerEnd', 'correct'],
  cancel: ['sign', 'replace', 'providerEnd', 'decline', 'cancel', 'signingUrl', 'correct'],
  sign: ['cancel', 'sign', 'replace', 'decline', 'providerEnd', 'correct'],
  decline: ['cancel', 'sign', 'replace', 'correct'],
  providerEnd: ['cancel', 'sign', 'replace', 'correct'],
  signingUrl: ['cancel', 'replace', 'correct'],
  correct: ['sign', 'cancel', 'correct', 'replace', 'decline', 'providerEnd'],
  view: ['sign', 'cancel'],
  fixZip: ['cancel', 'sign'],
};

/** Activities whose faults shift the order of effects that contend (a withdraw and a replace, say) weigh more. */
const FAULT_WEIGHTS: Partial<Record<PlannedFault['activity'], number>> = {
  updateTransaction: 4,
  withdrawTransaction: 4,
  getTransactionStatus: 3,
  attemptLoggedEvent: 3,
  createTransaction: 2,
  archiveCompletedDocuments: 2,
};

export function generateSchedule(seed: number, features: GeneratorFeatures): Schedule {
  // The kind is drawn apart, so a transaction schedule is the one its seed always gave.
  const draw = seededRandom(seed ^ 0x5eed4b1d)();
  const reuse = features.reuse ?? 0;
  const kind: ScheduleKind = draw < reuse ? 'reuse' : draw < reuse + (features.bulk ?? 0) ? 'bulk' : 'transaction';
  const random = seededRandom(seed ^ 0x0e5c1a7e);
  // The operator's and the server's moves come from a stream of their own too: the rest of a schedule stays as it was.
  const withOwnStreams = (drawn: Schedule): Schedule => {
    // Approvers too, before the moves (which may land beside an approver's answer).
    const schedule = features.approvals ? addApprovals(drawn, seededRandom(seed ^ 0x0a99e0a1), features) : drawn;
    const operated = features.operations ? addOperations(schedule, seededRandom(seed ^ 0x0b5e7a11), features.operations) : schedule;
    const recorded = features.records ? addRecords(operated, seededRandom(seed ^ 0x7ec0a4d5), features.records) : operated;
    const late = features.lateWrites ? addLateWrites(recorded, seededRandom(seed ^ 0x1a7e0ffe), features.lateWrites) : recorded;
    return features.slowActivities ? addSlowActivities(late, seededRandom(seed ^ 0x510e5105), features.slowActivities) : late;
  };
  if (kind === 'transaction') return withOwnStreams({ seed, ...drawTransaction(random, features, PLAIN) });
  if (kind === 'bulk') return withOwnStreams({ seed, kind, ...drawBulk(random) });
  const first = drawTransaction(random, features, { ...REUSE, archivePrefix: random() < 0.5 ? 'tenant-a' : undefined });
  const next: NextTransaction[] = [];
  for (let i = 1, n = random() < 0.1 ? 3 : 2; i < n; i++) {
    // Soon after (the log still runs, waiting out its retention), or past the log's 30-day retention (it closed).
    const gapMs = random() < 0.5 ? Math.ceil(random() * 120) * MINUTE : (31 + Math.floor(random() * 5)) * DAY;
    const { setup, steps, late } = drawTransaction(random, features, {
      ...REUSE,
      archivePrefix: random() < 0.6 ? `tenant-${'abc'[i]}` : undefined,
    });
    next.push({ gapMs, setup, steps, late });
  }
  return withOwnStreams({ seed, kind, ...first, next });
}

/**
 * How often each of the operator's and the server's moves is drawn, per transaction of a schedule (a bulk send: per
 * batch). Rare: each costs a round trip or more (a deploy that moves the auto-upgrade workflows costs a worker), and
 * 200 seeds still see each act a few times to a dozen.
 */
const OPERATIONS = { deploy: 0.08, suggest: 0.06, upkeep: 0.06, terminateLog: 0.05, terminateLate: 0.08 };

/** Adds the operator's and the server's moves to a schedule: into its steps (at their times) and its late moves. */
function addOperations(schedule: Schedule, random: () => number, scale: number): Schedule {
  const chance = (p: number) => random() < p;
  const share = (p: number) => chance(Math.min(1, p * scale));
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  /**
   * With (just after) a step already there: a move racing another; or anywhere in the first `within` of the time to
   * the deadline (a transaction is often over well before it).
   */
  const when = (steps: readonly TimedStep[], deadlineMs: number, within = 1.1) =>
    steps.length > 0 && chance(0.4) ? pick(steps).at + int(0, 2) * 1000 : int(0, Math.round((deadlineMs * within) / 1000)) * 1000;
  if (schedule.bulk) {
    const steps = [...schedule.steps];
    const deadline = schedule.setup.signingDeadlineMs;
    if (share(OPERATIONS.deploy)) steps.push({ kind: 'deploy', restart: false, at: when(steps, deadline) });
    if (share(OPERATIONS.suggest)) steps.push({ kind: 'suggestContinueAsNew', workflow: 'batch', at: when(steps, deadline) });
    return { ...schedule, steps: steps.sort((a, b) => a.at - b.at) };
  }
  const faults = [...schedule.faults];
  const part = (setup: ScheduleSetup, base: readonly TimedStep[], baseLate: readonly Step[]) => {
    const steps = [...base];
    let late = [...baseLate];
    const deadline = setup.signingDeadlineMs;
    if (share(OPERATIONS.deploy)) steps.push({ kind: 'deploy', restart: chance(0.4), at: when(steps, deadline, 0.5) });
    if (share(OPERATIONS.suggest)) {
      const workflow = setup.callback && chance(0.4) ? 'eventLog' : 'transaction';
      steps.push({ kind: 'suggestContinueAsNew', workflow, at: when(steps, deadline, 0.5) });
    }
    if (share(OPERATIONS.upkeep)) {
      // Sometimes more than a page of archives (100), so a walk continues as new when the server suggests it.
      const large = chance(0.15);
      const upkeep: Step = {
        kind: 'upkeep',
        others: large ? int(100, 110) : int(0, 4),
        evidence: Array.from({ length: int(1, 4) }, () => pick(['current', 'due', 'due', 'lapsed', 'unsealed', 'tampered'] as const)),
        authority: pick(['ok', 'ok', 'down', 'refuses'] as const),
        suggestContinueAsNew: large && chance(0.7),
      };
      // Beside a signature (its archive may be committed during the walk), anywhere, or after the end (its late archive too).
      const signs = steps.filter((s) => s.kind === 'sign');
      const where = pick(['sign', 'anywhere', 'late'] as const);
      if (where === 'late') late.push({ ...upkeep, delayMs: int(0, 12 * 60) * MINUTE });
      else steps.push({ ...upkeep, at: where === 'sign' && signs.length > 0 ? pick(signs).at + int(0, 2) * 1000 : when(steps, deadline) });
      if (chance(0.3))
        for (let i = int(1, 2); i > 0; i--)
          faults.push({
            activity: pick(['renewArchiveEvidence', 'renewArchiveEvidence', 'listArchivesForUpkeep'] as const),
            call: int(1, 3),
            when: chance(0.5) ? 'before' : 'after',
          });
    }
    if (setup.callback && share(OPERATIONS.terminateLog)) {
      if (chance(0.5)) steps.push({ kind: 'terminate', workflow: 'eventLog', at: when(steps, deadline) });
      else late.push({ kind: 'terminate', workflow: 'eventLog', delayMs: int(0, 24 * 60) * MINUTE });
    }
    if (late.some((s) => s.kind === 'resend') && share(OPERATIONS.terminateLate)) {
      // A late completion waits for an operator only when its ZIP was refused: terminated there, past the latest late webhook.
      if (!late.some((s) => s.kind === 'badZip')) late = [{ kind: 'badZip' }, ...late];
      late.push({ kind: 'terminate', workflow: 'lateCompletion', delayMs: 12 * HOUR });
      if (chance(0.7)) late.push({ kind: 'completionAgain', delayMs: 13 * HOUR });
    }
    return { steps: steps.sort((a, b) => a.at - b.at), late };
  };
  const first = part(schedule.setup, schedule.steps, schedule.late);
  const next = schedule.next?.map((n) => ({ ...n, ...part(n.setup, n.steps, n.late) }));
  return { ...schedule, ...first, faults, ...(next ? { next } : {}) };
}

/**
 * Adds legal holds and retention walks to a share of the schedules: an archive kept an hour to three days, so that
 * walks in the schedule's time find some due; holds on the transaction, its referenceId or its bulk send, placed
 * early, beside a signature (its archive committed as the hold lands) or after the end, some released, some with the
 * register told to continue as new first; walks anywhere, beside a hold, or after the end; and now and then a store
 * whose own holds fail (the register tries again an hour later) or a purge that fails.
 */
function addRecords(schedule: Schedule, random: () => number, share: number): Schedule {
  if (random() >= share) return schedule;
  const chance = (p: number) => random() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const records: RecordsSetup = { retentionMs: pick([HOUR, 6 * HOUR, DAY, 3 * DAY]), holdsObjects: chance(0.7), earlier: int(0, 4) };
  const steps = [...schedule.steps];
  const late = [...schedule.late];
  const deadline = schedule.setup.signingDeadlineMs;
  const scopes: HoldScope[] = schedule.bulk ? ['batch', 'batch', 'reference'] : ['transaction', 'transaction', 'reference'];
  const place = (step: Step) => {
    const where = pick(['early', 'sign', 'anywhere', 'late'] as const);
    const signs = steps.filter((s) => s.kind === 'sign');
    if (where === 'late') late.push({ ...step, delayMs: int(0, 48 * 60) * MINUTE } as Step);
    else {
      const at =
        where === 'early'
          ? int(0, 5) * 1000
          : where === 'sign' && signs.length > 0
            ? pick(signs).at + int(0, 2) * 1000
            : int(0, Math.round((deadline * 1.1) / 1000)) * 1000;
      steps.push({ ...step, at });
    }
  };
  for (let i = int(1, 3); i > 0; i--) place({ kind: 'hold', scope: pick(scopes), suggest: chance(0.2) });
  for (let i = int(0, 2); i > 0; i--) place({ kind: 'releaseHold' });
  for (let i = int(1, 2); i > 0; i--) place({ kind: 'retention' });
  const faults = [...schedule.faults];
  if (chance(0.3)) {
    // A store that refuses to hold (a final answer) makes the register try again an hour later; a purge is only
    // retried (one refused for good is kept until the next walk, past the schedule's last).
    const activity = pick(['applyLegalHolds', 'applyLegalHolds', 'purgeIfDue'] as const);
    const when = activity === 'applyLegalHolds' ? pick(['before', 'after', 'reject'] as const) : pick(['before', 'after'] as const);
    faults.push({ activity, call: int(1, 3), when });
  }
  return { ...schedule, steps: steps.sort((a, b) => a.at - b.at), late, faults, records };
}

/**
 * Adds writes to the provider that get no answer and reach it later (`late` faults) to a share of the schedules: a
 * create (its retry must not make a second transaction), a replace or correction (it may land after a later one, or
 * after the withdraw), a withdraw; each landing before the first to third provider call after the give-up.
 */
function addLateWrites(schedule: Schedule, random: () => number, share: number): Schedule {
  if (random() >= share) return schedule;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  // A bulk send's rows are created and then only followed; a transaction is also replaced, corrected and withdrawn.
  const writes: readonly PlannedFault['activity'][] = schedule.bulk
    ? ['createTransaction']
    : ['createTransaction', 'updateTransaction', 'updateTransaction', 'withdrawTransaction', 'withdrawTransaction'];
  const faults = [...schedule.faults];
  for (let i = int(1, 2); i > 0; i--) faults.push({ activity: pick(writes), call: int(1, 3), when: 'late', landsAfter: int(1, 3) });
  return { ...schedule, faults };
}

/**
 * Makes one or two activity calls of a share of the schedules take one to six seconds of the workflow's time, before
 * their effect or between it and their answer: messages, webhooks and timers meet them in flight. The steps of a
 * schedule are seconds to days apart, so a step lands during a slow call when it races another or comes first.
 */
function addSlowActivities(schedule: Schedule, random: () => number, share: number): Schedule {
  if (random() >= share) return schedule;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const faults = [...schedule.faults];
  for (let i = int(1, 2); i > 0; i--)
    faults.push({
      activity: pick(FAULTABLE),
      call: int(1, 3),
      when: 'slow',
      takesMs: int(1, 6) * 1_000,
      slowAt: pick(['before', 'after'] as const),
    });
  return { ...schedule, faults };
}

/** The share of the transactions without approvers that an approver answers anyway (refused). */
const STRAY_ANSWERS = 0.03;

/**
 * Adds approvers to some of a schedule's transactions (a bulk send's rows take none): the input's `approval` (a few
 * approvers, sometimes a quorum and reminders, a deadline before the signing one), and their answers, racing the
 * creation, each other, the approval deadline and the schedule's other steps, with now and then a rival message
 * right behind one. An answer by someone not named, or by an approver who answered already, is refused: those are
 * drawn too.
 */
function addApprovals(schedule: Schedule, random: () => number, features: GeneratorFeatures): Schedule {
  if (schedule.bulk) return schedule;
  const first = approvalsOf(schedule.setup, schedule.steps, random, features);
  const next = schedule.next?.map((n) => ({ ...n, ...approvalsOf(n.setup, n.steps, random, features) }));
  return { ...schedule, ...first, ...(next ? { next } : {}) };
}

/** One transaction's approvers and their answers (or, mostly, none). */
function approvalsOf(
  base: ScheduleSetup,
  baseSteps: readonly TimedStep[],
  random: () => number,
  features: GeneratorFeatures,
): { setup: ScheduleSetup; steps: TimedStep[] } {
  const chance = (p: number) => random() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const sorted = (steps: TimedStep[]) => steps.sort((a, b) => a.at - b.at);
  const signing = base.signingDeadlineMs;
  if (!chance(features.approvals ?? 0)) {
    // An answer to a transaction that names no approvers: refused.
    if (!chance(STRAY_ANSWERS)) return { setup: base, steps: [...baseSteps] };
    const at = int(0, Math.round(signing / 2 / 1000)) * 1000;
    return { setup: base, steps: sorted([...baseSteps, { kind: pick(['approve', 'reject'] as const), approver: 0, at }]) };
  }
  const approvers = int(1, 4);
  const quorum = chance(0.5) ? int(1, approvers) : undefined;
  // Soon (the signers' steps then find it sent) or late, up to just before the signing deadline.
  const deadlineMs = Math.max(MINUTE, Math.round((signing * pick([0.05, 0.2, 0.5, 0.9])) / 1000) * 1000);
  const reminders =
    base.callback && chance(0.4)
      ? {
          firstAfterMs: Math.max(1000, Math.round(deadlineMs * (0.1 + 0.3 * random()))),
          everyMs: Math.max(1000, Math.round(deadlineMs * (0.1 + 0.2 * random()))),
          maxCount: int(1, 3),
        }
      : undefined;
  // An approved transaction is sent: a draft takes no approvers.
  const setup: ScheduleSetup = {
    ...base,
    status: 'esign_pending',
    approval: { approvers, ...(quorum ? { quorum } : {}), deadlineMs, ...(reminders ? { reminders } : {}) },
  };
  const steps = [...baseSteps];
  const answers: TimedStep[] = [];
  const nearDeadline = () => Math.max(0, deadlineMs + int(-5, 5) * 1000);
  if (chance(0.65)) {
    // Enough approvals to send it, from different approvers: early (racing the creation), spread out, or at the deadline.
    const order = Array.from({ length: approvers }, (_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = int(0, i);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const from = pick(['early', 'early', 'spread', 'deadline'] as const);
    let at = from === 'deadline' ? nearDeadline() : from === 'spread' ? int(0, Math.round(deadlineMs / 2 / 1000)) * 1000 : int(0, 3) * 1000;
    for (const approver of order.slice(0, quorum ?? approvers)) {
      answers.push({ kind: 'approve', approver, at });
      at += chance(0.5) ? int(0, 2) * 1000 : int(1, Math.max(1, Math.round(deadlineMs / 4 / MINUTE))) * MINUTE;
    }
  }
  for (let i = int(0, 3); i > 0; i--) {
    // Anyone's answer (a rejection, one answered again, someone not named), anywhere, beside another step, or at the deadline.
    const where = pick(['anywhere', 'anywhere', 'race', 'deadline'] as const);
    const others = [...steps, ...answers];
    const at =
      where === 'race' && others.length > 0
        ? pick(others).at + int(0, 2) * 1000
        : where === 'deadline'
          ? nearDeadline()
          : int(0, Math.round((deadlineMs * 1.2) / 1000)) * 1000;
    answers.push({ kind: chance(0.6) ? 'approve' : 'reject', approver: chance(0.12) ? approvers : int(0, approvers - 1), at });
  }
  for (const answer of [...answers]) {
    if (!chance(0.3)) continue;
    const at = answer.at + int(0, 2) * 1000;
    answers.push({ ...rivalOf(base, random, features), at });
  }
  return { setup, steps: sorted([...steps, ...answers]) };
}

/** A message that contends with an approver's answer: a signing URL or a replace asked as the quorum is met, a cancel, a restart. */
function rivalOf(setup: ScheduleSetup, random: () => number, features: GeneratorFeatures): Step {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const participant = int(0, setup.participants - 1);
  switch (pick(['signingUrl', 'signingUrl', 'query', 'query', 'replace', 'correct', 'cancel', 'restartWorker'] as const)) {
    case 'signingUrl':
      return { kind: 'signingUrl', participant };
    case 'query':
      return { kind: 'query' };
    case 'replace':
      return { kind: 'replace', status: 'esign_pending' };
    case 'correct':
      return { kind: 'correct', correction: pick(CORRECTION_KINDS), participant, deadlineMs: int(1, 48) * HOUR };
    case 'cancel':
      return { kind: 'cancel' };
    case 'restartWorker':
      return features.restarts ? { kind: 'restartWorker' } : { kind: 'query' };
  }
}

/** A bulk send of 2 to 5 rows (one page) and what happens to it: cancels, signers, 429s, a crash mid-page. */
function drawBulk(random: () => number): Pick<Schedule, 'setup' | 'steps' | 'faults' | 'late' | 'bulk'> {
  const chance = (p: number) => random() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const rows = int(2, 5);
  // Short: the batch counts its rows every few minutes of workflow time while it follows them, each a round trip.
  const signingDeadlineMs = pick([HOUR, HOUR, 2 * HOUR, 6 * HOUR]);
  const reconcileIntervalMs = Math.max(MINUTE, Math.round(signingDeadlineMs / int(3, 10) / 1000) * 1000);
  const setup: ScheduleSetup = {
    participants: 1,
    status: 'esign_pending',
    signingDeadlineMs,
    reconcileIntervalMs,
    reconcileMaxIntervalMs: reconcileIntervalMs,
    callback: chance(0.4),
    signingUrlWithStart: false,
  };
  const bridge = (): Delivery => (chance(0.85) ? [{ via: 'bridge', afterMs: 0 }] : []);
  const steps: TimedStep[] = [];
  for (let i = int(1, 6); i > 0; i--) {
    // Early (the batch preparing or sending: the first seconds), or anywhere before the deadline.
    const at = chance(0.3) ? int(0, 3) * 1000 : int(0, Math.round((signingDeadlineMs * 1.1) / 1000)) * 1000;
    const row = int(0, rows - 1);
    // No worker restarts: the batch takes no signal to move its task off a dead worker's queue (explore/sticky-queues.ts);
    // the worker that dies in the middle of a page is the crash explored here.
    switch (pick(['sign', 'sign', 'sign', 'decline', 'view', 'bulkCancel', 'bulkCancel', 'providerDown'] as const)) {
      case 'sign':
        steps.push({ kind: 'sign', participant: 0, row, webhooks: [bridge(), bridge()], at });
        break;
      case 'decline':
        steps.push({ kind: 'decline', participant: 0, row, webhooks: [bridge()], at });
        break;
      case 'view':
        steps.push({ kind: 'view', participant: 0, row, webhooks: [bridge()], at });
        break;
      case 'bulkCancel':
        steps.push({ kind: 'bulkCancel', at });
        break;
      case 'providerDown':
        // The provider's rate limit on creation (or an outage), for a few minutes.
        steps.push({ kind: 'providerDown', operation: 'createTransaction', status: pick([429, 429, 503]), at });
        steps.push({ kind: 'providerUp', operation: 'createTransaction', at: at + int(1, 30) * MINUTE });
        break;
    }
  }
  steps.sort((a, b) => a.at - b.at);
  const faults: PlannedFault[] = [];
  if (chance(0.4)) {
    const faultable = [
      'startBatchPage',
      'batchCounts',
      'cancelBatchTransactions',
      'writeBatchResult',
      'prepareBatch',
      'createTransaction',
    ] as const;
    for (let i = int(1, 3); i > 0; i--) faults.push({ activity: pick(faultable), call: int(1, 3), when: chance(0.5) ? 'before' : 'after' });
  }
  const bulk: BulkSetup = {
    rows,
    maxInFlight: pick([1, 2, 5, 50]),
    crashMidPage: chance(0.3) ? [{ call: 1, rows: int(1, rows - 1) }] : [],
  };
  // A cancel after the batch ended: refused, nothing left to cancel.
  const late: Step[] = chance(0.3) ? [{ kind: 'bulkCancel' }] : [];
  return { setup, steps, faults, late, bulk };
}

/** What a kind adds to one transaction's draw (none of it, for `transaction`: its draws stay as they were). */
interface Extras {
  /** Always with a callback (an event log to explore). */
  callback: boolean;
  /** The archive prefix, instead of the drawn one. */
  archivePrefix?: string | undefined;
  /** Steps at most. */
  maxSteps: number;
  /** Weights of the kinds only `reuse` draws. */
  weights: { endpointDown: number; redeliver: number; providerDown: number; purge: number; operatorRetry: number };
  /** Final answers (4xx) among the planned faults. */
  rejects: boolean;
  /** The late path's ZIP may be refused (then the operator retries, is refused again, fixes it, retries). */
  lateBadZip: boolean;
}
const PLAIN: Extras = {
  callback: false,
  maxSteps: 14,
  weights: { endpointDown: 0, redeliver: 0, providerDown: 0, purge: 0, operatorRetry: 0 },
  rejects: false,
  lateBadZip: false,
};
const REUSE: Extras = {
  callback: true,
  maxSteps: 7,
  weights: { endpointDown: 5, redeliver: 4, providerDown: 3, purge: 2, operatorRetry: 2 },
  rejects: true,
  lateBadZip: true,
};
/** Activities a final answer (a 4xx) may hit: the provider's, outside the reconciliation poll too. */
const REJECTABLE: readonly PlannedFault['activity'][] = [
  'getTransactionStatus',
  'updateTransaction',
  'withdrawTransaction',
  'createSigningUrl',
  'describeTransaction',
];

function drawTransaction(
  random: () => number,
  features: GeneratorFeatures,
  extras: Extras,
): Pick<Schedule, 'setup' | 'steps' | 'faults' | 'late'> {
  const chance = (p: number) => random() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const weighted = <T extends string>(weights: Record<T, number>): T => {
    const entries = Object.entries(weights) as [T, number][];
    let r = random() * entries.reduce((sum, [, w]) => sum + w, 0);
    for (const [k, w] of entries) if ((r -= w) < 0) return k;
    return entries[entries.length - 1]![0];
  };

  const participants = int(1, 3);
  const signingDeadlineMs = pick([HOUR, 6 * HOUR, 24 * HOUR, 7 * 24 * HOUR]);
  // Time is free on the test server, workflow tasks are not: the poll interval is set by how many polls fit
  // before the deadline (each costs a workflow task). A run with a small history bound polls enough to reach it.
  const maxHistoryEvents = features.maxHistoryEvents && chance(0.4) ? pick([100, 100, 150, 250]) : undefined;
  const polls = maxHistoryEvents ? int(20, 50) : int(3, 20);
  const reconcileIntervalMs = Math.max(MINUTE, Math.round(signingDeadlineMs / polls / 1000) * 1000);
  const callback = chance(0.7) || extras.callback;
  const setup: ScheduleSetup = {
    participants,
    status: chance(0.25) ? 'draft' : 'esign_pending',
    signingDeadlineMs,
    reconcileIntervalMs,
    reconcileMaxIntervalMs: reconcileIntervalMs * pick([1, 2, 4]),
    callback,
    signingUrlWithStart: chance(0.15),
    ...(chance(0.3) && extras === PLAIN ? { archivePrefix: 'tenant-a' } : {}),
    ...(extras.archivePrefix ? { archivePrefix: extras.archivePrefix } : {}),
    ...(callback && chance(0.4)
      ? {
          reminders: {
            firstAfterMs: Math.round(signingDeadlineMs * (0.1 + 0.2 * random())),
            everyMs: Math.round(signingDeadlineMs * (0.1 + 0.2 * random())),
            maxCount: int(1, 4),
          },
        }
      : {}),
    ...(maxHistoryEvents ? { maxHistoryEvents } : {}),
  };

  const delivery = (): Delivery => {
    switch (weighted({ bridge: 55, direct: 10, duplicated: 10, lost: 12, late: 13 })) {
      case 'bridge':
        return [{ via: 'bridge', afterMs: 0 }];
      case 'direct':
        return [{ via: 'direct', afterMs: 0 }];
      case 'duplicated':
        return [
          { via: pick(['bridge', 'direct'] as const), afterMs: 0 },
          { via: pick(['bridge', 'direct'] as const), afterMs: int(0, 10) * MINUTE },
        ];
      case 'lost':
        return [];
      case 'late':
        return [{ via: 'bridge', afterMs: int(1, 120) * MINUTE }];
    }
  };
  /** After the end, the bridge is the only way in, and a provider retries a webhook until it is taken. */
  const lateDelivery = (): Delivery =>
    chance(0.3)
      ? [
          { via: 'bridge', afterMs: 0 },
          { via: 'bridge', afterMs: int(1, 600) * MINUTE },
        ]
      : [{ via: 'bridge', afterMs: int(0, 600) * MINUTE }];

  const steps: TimedStep[] = [];
  const count = int(2, extras.maxSteps);
  let zipBroken = false;
  let endpointBroken = false;
  const anyKind = (): Step['kind'] =>
    weighted({
      sign: 25,
      view: 6,
      decline: 4,
      providerEnd: 4,
      cancel: 7,
      replace: 8,
      correct: 6,
      signingUrl: 7,
      query: 6,
      restartWorker: features.restarts ? 3 : 0,
      strayWebhook: 3,
      badZip: features.badZips && !zipBroken ? 4 : 0,
      ...extras.weights,
      endpointDown: endpointBroken ? 0 : extras.weights.endpointDown,
    });
  for (let i = 0; i < count; i++) {
    const previous = steps[steps.length - 1];
    let at: number;
    let kind: Step['kind'];
    const where = weighted({ anywhere: 55, race: previous ? 35 : 0, deadline: 10 });
    if (where === 'race') {
      // With (or just after) the previous step, and of a kind that contends with it: races are where the bugs are.
      at = previous!.at + int(0, 2) * 1000;
      kind = chance(0.8) ? pick(RIVALS[previous!.kind] ?? [anyKind()]) : anyKind();
    } else if (where === 'deadline') {
      // At the deadline, when the workflow withdraws the transaction on its own.
      at = Math.max(0, signingDeadlineMs + int(-5, 5) * 1000);
      kind = pick(['sign', 'replace', 'cancel', 'decline', 'providerEnd', 'correct'] as const);
    } else {
      at = int(0, Math.round((signingDeadlineMs * 1.1) / 1000)) * 1000;
      kind = anyKind();
    }
    if (kind === 'badZip' && (!features.badZips || zipBroken)) kind = 'sign';
    if (kind === 'restartWorker' && !features.restarts) kind = 'query';
    if (kind === 'endpointDown' && endpointBroken) kind = 'redeliver';
    const participant = int(0, participants - 1);
    let step: Step;
    switch (kind) {
      case 'sign':
        step = { kind, participant, webhooks: [delivery(), delivery()] };
        break;
      case 'view':
      case 'decline':
        step = { kind, participant, webhooks: [delivery()] };
        break;
      case 'providerEnd':
        step = { kind, status: pick(['cancelled', 'expired', 'deleted'] as const), webhooks: [delivery()] };
        break;
      case 'replace':
        step = { kind, status: chance(0.7) ? 'esign_pending' : 'draft' };
        break;
      case 'signingUrl':
        step = { kind, participant };
        break;
      case 'correct':
        step = {
          kind,
          correction: pick(CORRECTION_KINDS),
          participant,
          // Sooner or later than the deadline it had, or (now and then) already past.
          deadlineMs: chance(0.15) ? -MINUTE : int(1, Math.round((signingDeadlineMs * 1.5) / MINUTE)) * MINUTE,
        };
        break;
      case 'badZip':
        zipBroken = true;
        // Fixed later, so the workflow can end: the operator's repair follows within the deadline.
        steps.push({ kind, at });
        steps.push({ kind: 'fixZip', at: at + int(1, 120) * MINUTE });
        continue;
      case 'endpointDown':
        endpointBroken = true;
        // Back within three hours: the log's pending events go out then, its failed ones only when redelivered.
        steps.push({ kind, at });
        steps.push({ kind: 'endpointUp', at: at + int(1, 180) * MINUTE });
        continue;
      case 'redeliver':
        step = { kind, after: int(0, 3) };
        break;
      case 'providerDown': {
        const operation = pick(['createIframeUrl', 'createIframeUrl', 'getTransaction', 'updateTransaction'] as const);
        // No 404: the provider saying a transaction does not exist is its deletion (`purge`), and the workflow takes it so.
        step = { kind, operation, status: pick([503, 503, 429, 422, 400]) };
        // Back soon; the signing-URL endpoint sometimes only well past the deadline (an endpoint that keeps failing).
        // The reads' is not left down for long: a local activity retrying for days of skipped time times out its
        // workflow task on the test server, which a real server (the task heartbeating in real time) would not.
        const long = operation === 'createIframeUrl' && chance(0.3);
        steps.push({ kind: 'providerUp', operation, at: at + (long ? Math.round(signingDeadlineMs * 1.5) : int(1, 60) * MINUTE) });
        break;
      }
      case 'providerUp':
        step = { kind, operation: 'getTransaction' };
        break;
      default:
        // The kinds that carry nothing but their kind (cancel, query, strayWebhook, restartWorker, fixZip, resend); the
        // operator's and the server's moves are never drawn here (addOperations adds them).
        step = { kind } as Step;
    }
    steps.push({ ...step, at });
  }
  steps.sort((a, b) => a.at - b.at);

  const faults: PlannedFault[] = [];
  if (chance(0.7)) {
    const weights = Object.fromEntries(FAULTABLE.map((a) => [a, FAULT_WEIGHTS[a] ?? 1])) as Record<PlannedFault['activity'], number>;
    for (let i = int(1, 5); i > 0; i--)
      faults.push({ activity: weighted(weights), call: int(1, 3), when: chance(0.5) ? 'before' : 'after' });
  }
  if (extras.rejects && chance(0.3)) faults.push({ activity: pick(REJECTABLE), call: int(1, 3), when: 'reject' });

  // A third of the runs try the late path: after a cancel or expiry, someone sends the transaction again and everyone signs.
  const late: Step[] = chance(extras.lateBadZip ? 0.5 : 0.35)
    ? [
        ...(extras.lateBadZip && chance(0.5) ? [{ kind: 'badZip' } as const] : []),
        { kind: 'resend' },
        ...Array.from({ length: participants }, (_, p): Step => ({
          kind: 'sign',
          participant: p,
          webhooks: [lateDelivery(), lateDelivery()],
        })),
      ]
    : [];
  return { setup, steps, faults, late };
}

/** One line per step, for a failure report. */
export function describeSchedule(schedule: Schedule): string {
  const lines = [`setup ${JSON.stringify(schedule.setup)}`];
  for (const s of schedule.steps) lines.push(`  +${(s.at / 1000).toFixed(0)}s ${JSON.stringify({ ...s, at: undefined })}`);
  for (const f of schedule.faults)
    lines.push(
      f.when === 'late'
        ? `  fault ${f.activity} call ${f.call}: no answer, its write lands before the provider call ${f.landsAfter ?? 1} after`
        : f.when === 'slow'
          ? `  fault ${f.activity} call ${f.call} takes ${f.takesMs ?? 1_000} ms ${f.slowAt ?? 'before'} its effect`
          : `  fault ${f.activity} call ${f.call} ${f.when} its effect`,
    );
  for (const s of schedule.late) lines.push(`  late ${JSON.stringify(s)}`);
  if (schedule.bulk) lines.push(`bulk ${JSON.stringify(schedule.bulk)}`);
  for (const [i, n] of (schedule.next ?? []).entries()) {
    lines.push(`then transaction ${i + 2}, ${(n.gapMs / 60_000).toFixed(0)} min after: setup ${JSON.stringify(n.setup)}`);
    for (const s of n.steps) lines.push(`  +${(s.at / 1000).toFixed(0)}s ${JSON.stringify({ ...s, at: undefined })}`);
    for (const s of n.late) lines.push(`  late ${JSON.stringify(s)}`);
  }
  return lines.join('\n');
}
