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
import { FAULTABLE, type PlannedFault } from './activities.js';

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
  /** The `status` query (on a worker whose cache was emptied, it replays the history). */
  | { kind: 'query' }
  /** A participant opens the signing page; `webhooks[i]` is the fate of the i-th webhook the move sends. */
  | { kind: 'view'; participant: number; webhooks: Delivery[] }
  /** A participant signs; the last signature also sends `esign-completed` (its fate is `webhooks[1]`). */
  | { kind: 'sign'; participant: number; webhooks: Delivery[] }
  | { kind: 'decline'; participant: number; webhooks: Delivery[] }
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
  | { kind: 'resend' };

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
}

export interface Schedule {
  seed: number;
  setup: ScheduleSetup;
  steps: TimedStep[];
  faults: PlannedFault[];
  /** After the workflow ended and its end was checked: moves of the world the late path must handle. */
  late: Step[];
}

/** What the generator may use: it widens as the workflow gains the means (the history bound, `retryArchive`). */
export interface GeneratorFeatures {
  maxHistoryEvents: boolean;
  /** Invalid ZIPs (only worth generating when the workflow can recover from them). */
  badZips: boolean;
  /** Worker restarts (explore/sticky-queues.ts says what a restart needs on the test server). */
  restarts?: boolean;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Messages and moves that contend: a step generated to race another picks its kind from these. */
const RIVALS: Partial<Record<Step['kind'], readonly Step['kind'][]>> = {
  replace: ['cancel', 'sign', 'decline', 'replace', 'providerEnd'],
  cancel: ['sign', 'replace', 'providerEnd', 'decline', 'cancel', 'signingUrl'],
  sign: ['cancel', 'sign', 'replace', 'decline', 'providerEnd'],
  decline: ['cancel', 'sign', 'replace'],
  providerEnd: ['cancel', 'sign', 'replace'],
  signingUrl: ['cancel', 'replace'],
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
  const random = seededRandom(seed ^ 0x0e5c1a7e);
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
  const callback = chance(0.7);
  const setup: ScheduleSetup = {
    participants,
    status: chance(0.25) ? 'draft' : 'esign_pending',
    signingDeadlineMs,
    reconcileIntervalMs,
    reconcileMaxIntervalMs: reconcileIntervalMs * pick([1, 2, 4]),
    callback,
    signingUrlWithStart: chance(0.15),
    ...(chance(0.3) ? { archivePrefix: 'tenant-a' } : {}),
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
  const count = int(2, 14);
  let zipBroken = false;
  const anyKind = (): Step['kind'] =>
    weighted({
      sign: 25,
      view: 6,
      decline: 4,
      providerEnd: 4,
      cancel: 7,
      replace: 8,
      signingUrl: 7,
      query: 6,
      restartWorker: features.restarts ? 3 : 0,
      strayWebhook: 3,
      badZip: features.badZips && !zipBroken ? 4 : 0,
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
      kind = pick(['sign', 'replace', 'cancel', 'decline', 'providerEnd'] as const);
    } else {
      at = int(0, Math.round((signingDeadlineMs * 1.1) / 1000)) * 1000;
      kind = anyKind();
    }
    if (kind === 'badZip' && (!features.badZips || zipBroken)) kind = 'sign';
    if (kind === 'restartWorker' && !features.restarts) kind = 'query';
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
      case 'badZip':
        zipBroken = true;
        // Fixed later, so the workflow can end: the operator's repair follows within the deadline.
        steps.push({ kind, at });
        steps.push({ kind: 'fixZip', at: at + int(1, 120) * MINUTE });
        continue;
      default:
        // The kinds that carry nothing but their kind (cancel, query, strayWebhook, restartWorker, fixZip, resend).
        step = { kind };
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

  // A third of the runs try the late path: after a cancel or expiry, someone sends the transaction again and everyone signs.
  const late: Step[] = chance(0.35)
    ? [
        { kind: 'resend' },
        ...Array.from({ length: participants }, (_, p): Step => ({
          kind: 'sign',
          participant: p,
          webhooks: [lateDelivery(), lateDelivery()],
        })),
      ]
    : [];
  return { seed, setup, steps, faults, late };
}

/** One line per step, for a failure report. */
export function describeSchedule(schedule: Schedule): string {
  const lines = [`setup ${JSON.stringify(schedule.setup)}`];
  for (const s of schedule.steps) lines.push(`  +${(s.at / 1000).toFixed(0)}s ${JSON.stringify({ ...s, at: undefined })}`);
  for (const f of schedule.faults) lines.push(`  fault ${f.activity} call ${f.call} ${f.when} its effect`);
  for (const s of schedule.late) lines.push(`  late ${JSON.stringify(s)}`);
  return lines.join('\n');
}
