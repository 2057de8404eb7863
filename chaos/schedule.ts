import { seededRandom } from '../src/util/seeded-random.js';

/** How the driver ends a transaction; the checks hold its outcome against the provider's final state. */
export type Scenario = 'sign' | 'decline' | 'provider-cancel' | 'provider-expire' | 'provider-delete' | 'deadline-race';

export type ChaosAction =
  | { kind: 'kill-worker'; worker: number; downMs: number }
  | { kind: 'restart-bridge'; /** Which of several bridges; absent when there is one. */ bridge?: number; downMs: number }
  | { kind: 'restart-temporal'; downMs: number }
  | { kind: 'kill-temporal-service'; service: 'history' | 'matching' | 'frontend'; downMs: number }
  | { kind: 'restart-postgres'; downMs: number };

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

/** The seeded schedule of a run: worker kills, bridge restarts, and one Temporal restart (or, on the cluster, each service and PostgreSQL once). */
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
  return events.sort((a, b) => a.afterStarted - b.afterStarted);
}

export function describeAction(a: ChaosAction): string {
  switch (a.kind) {
    case 'kill-worker':
      return `SIGKILL worker ${a.worker + 1}, restart after ${a.downMs} ms`;
    case 'restart-bridge':
      return `SIGKILL ${a.bridge === undefined ? 'the bridge' : `bridge ${a.bridge + 1}`}, restart after ${a.downMs} ms`;
    case 'restart-temporal':
      return `stop the Temporal dev server, restart after ${a.downMs} ms`;
    case 'kill-temporal-service':
      return `SIGKILL the Temporal ${a.service} service, restart after ${a.downMs} ms`;
    case 'restart-postgres':
      return `SIGKILL PostgreSQL (postmaster and backends), restart after ${a.downMs} ms`;
  }
}
