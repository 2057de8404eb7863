import type { FaultConfigInput } from '../src/client/sandbox-control.js';
import { seededRandom } from '../src/util/seeded-random.js';

/** How the driver ends a transaction; the checks hold its outcome against the provider's final state. */
export type Scenario = 'sign' | 'decline' | 'provider-cancel' | 'provider-expire' | 'provider-delete' | 'deadline-race';

export type ChaosAction =
  | { kind: 'kill-worker'; worker: number; downMs: number }
  | { kind: 'restart-bridge'; /** Which of several bridges; absent when there is one. */ bridge?: number; downMs: number }
  | { kind: 'restart-temporal'; downMs: number }
  | { kind: 'kill-temporal-service'; service: 'history' | 'matching' | 'frontend'; downMs: number }
  | { kind: 'restart-postgres'; downMs: number }
  /** The workers' next version deployed beside theirs and made current; the old one drains, then stops (chaos/workers.ts). */
  | { kind: 'rolling-deploy' }
  /** Not a fault but load for the faults to meet: one bulk-send batch, submitted twice, signed as it goes (chaos/bulk.ts). */
  | { kind: 'bulk-send' };

/** The faults the sandbox injects by default (the issue's mix), in a sequence fixed by the seed. */
export const defaultFaults = (seed: number): FaultConfigInput => ({
  error5xxRate: 0.05,
  resetRate: 0.02,
  // Work done, answer lost: what makes a retried create dangerous.
  lostResponseRate: 0.02,
  rateLimitRate: 0.02,
  retryAfterSeconds: 1,
  truncateZipRate: 0.02,
  duplicateWebhookRate: 0.1,
  dropWebhookRate: 0.05,
  seed,
});

/** The shape of each of a run's transactions, fixed by the seed: its signers, its scenario, when a race signs. */
export function transactionPlan(seed: number, transactions: number) {
  const random = seededRandom(seed);
  const participantCounts = Array.from({ length: transactions }, () => (random() < 0.3 ? 2 : 1));
  // Most transactions are signed; a tenth each declines, is ended by the provider, or races its deadline (seeded shuffle).
  const tenth = transactions >= 10 ? Math.floor(transactions / 10) : 0;
  const providerEnds = ['provider-cancel', 'provider-expire', 'provider-delete'] as const;
  const scenarios: Scenario[] = [
    ...Array.from({ length: tenth }, () => 'decline' as const),
    ...Array.from({ length: tenth }, (_, k) => providerEnds[k % 3]!),
    ...Array.from({ length: tenth }, () => 'deadline-race' as const),
  ];
  while (scenarios.length < transactions) scenarios.push('sign');
  for (let k = scenarios.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1));
    [scenarios[k], scenarios[j]] = [scenarios[j]!, scenarios[k]!];
  }
  const raceDelaysMs = Array.from({ length: transactions }, () => 6_000 + random() * 4_000);
  return { participantCounts, scenarios, raceDelaysMs };
}

/**
 * A chaos event fires once `afterStarted` transactions have been started.
 * Progress, not wall-clock time, triggers events, so the same seed breaks
 * the same stage of a run on a fast machine and on a slow one.
 */
export interface ChaosEvent {
  afterStarted: number;
  action: ChaosAction;
}

export interface ScheduleOptions {
  seed: number;
  transactions: number;
  workers: number;
  /** Bridges behind the load balancer (1 on the dev server, 2 on the cluster); each is killed in turn. */
  bridges?: number;
  /** On the cluster, the Temporal services and PostgreSQL fail one by one instead of the dev server as a whole. */
  cluster?: boolean;
}

/**
 * The seeded schedule of a run: worker kills, bridge restarts, one Temporal restart (or, on the cluster, each
 * service and PostgreSQL once), one rolling deploy of the workers, and one bulk-send batch.
 */
export function chaosSchedule({ seed, transactions, workers, bridges = 1, cluster = false }: ScheduleOptions): ChaosEvent[] {
  const random = seededRandom(seed ^ 0x5eed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  // Events land while many transactions are in flight: after the first tenth is started, before the last few.
  const first = Math.max(1, Math.floor(transactions / 10));
  const last = Math.max(first, transactions - 2);
  const events: ChaosEvent[] = [];
  const workerKills = Math.max(4, Math.round(transactions / 15));
  for (let i = 0; i < workerKills; i++) {
    events.push({
      afterStarted: between(first, last),
      action: { kind: 'kill-worker', worker: between(0, workers - 1), downMs: between(500, 4000) },
    });
  }
  const bridgeRestarts = Math.max(2, Math.round(transactions / 50));
  for (let i = 0; i < bridgeRestarts; i++) {
    // In turn rather than drawn, so every bridge fails once and one seed keeps its schedule whatever the count.
    events.push({
      afterStarted: between(first, last),
      action: { kind: 'restart-bridge', ...(bridges > 1 ? { bridge: i % bridges } : {}), downMs: between(500, 3000) },
    });
  }
  const middle = () => between(Math.floor(transactions * 0.2), Math.floor(transactions * 0.8));
  if (cluster) {
    for (const service of ['history', 'matching', 'frontend'] as const) {
      events.push({ afterStarted: middle(), action: { kind: 'kill-temporal-service', service, downMs: between(1000, 4000) } });
    }
    events.push({ afterStarted: middle(), action: { kind: 'restart-postgres', downMs: between(1000, 3000) } });
  } else {
    events.push({
      afterStarted: between(Math.floor(transactions * 0.3), Math.floor(transactions * 0.6)),
      action: { kind: 'restart-temporal', downMs: between(2000, 6000) },
    });
  }
  // Drawn after everything else, so a seed's other events are the ones it had before the deploy existed.
  events.push({
    afterStarted: between(Math.floor(transactions * 0.3), Math.floor(transactions * 0.6)),
    action: { kind: 'rolling-deploy' },
  });
  // Last for the same reason as the deploy.
  events.push({ afterStarted: between(Math.floor(transactions * 0.2), Math.floor(transactions * 0.4)), action: { kind: 'bulk-send' } });
  return events.sort((a, b) => a.afterStarted - b.afterStarted);
}

/** `workerVersion`: the build id of the workers a kill hits. */
export function describeAction(a: ChaosAction, workerVersion?: string): string {
  switch (a.kind) {
    case 'kill-worker':
      return `SIGKILL worker ${a.worker + 1}${workerVersion ? ` of ${workerVersion}` : ''}, restart after ${a.downMs} ms`;
    case 'restart-bridge':
      return `SIGKILL ${a.bridge === undefined ? 'the bridge' : `bridge ${a.bridge + 1}`}, restart after ${a.downMs} ms`;
    case 'restart-temporal':
      return `stop the Temporal dev server, restart after ${a.downMs} ms`;
    case 'kill-temporal-service':
      return `SIGKILL the Temporal ${a.service} service, restart after ${a.downMs} ms`;
    case 'restart-postgres':
      return `SIGKILL PostgreSQL (postmaster and backends), restart after ${a.downMs} ms`;
    case 'rolling-deploy':
      return "rolling deploy: the workers' next version started beside them and made current, the old one drained, then stopped";
    case 'bulk-send':
      return 'bulk send: one batch submitted, then submitted again, its rows signed as they become signable';
  }
}
