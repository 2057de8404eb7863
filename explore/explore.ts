/**
 * The interleaving explorer: generates a schedule per seed, runs it on a
 * free lane (a time-skipping server of its own), checks what happened, and
 * shrinks the schedules that failed. Used by the CLI (explore/main.ts) and
 * the tests (test/explorer/explorer.test.ts, test/explorer/explorer-regressions.test.ts).
 */
import proto from '@temporalio/proto';
import { check, type CheckName, type Finding } from './checks.js';
import { runSchedule } from './driver.js';
import { QUERY_LOST_TO_CONTINUE_AS_NEW } from './queries.js';
import { taskInFlight } from './timers.js';
import { TEST_SERVER_TIMER_RACE } from './sticky-queues.js';
import { workflowFeatures, type WorkflowFeatures } from './features.js';
import { eventName, type Observation } from './observation.js';
import { bundleWorkflows, Lane, Replayer, type WorkflowBundle } from './lane.js';
import { generateSchedule, type GeneratorFeatures, type Schedule, type TimedStep } from './schedule.js';
import { shrink } from './shrink.js';
import { openDefects, type Regression } from './regressions.js';

/** The share of seeds that are `reuse` schedules (explore/schedule.ts), unless the caller says otherwise. */
export const DEFAULT_REUSE_SHARE = 0.12;
/** The share of seeds that are `bulk` schedules. */
export const DEFAULT_BULK_SHARE = 0.08;
/** The share of schedules with legal holds and retention walks among their moves (explore/records.ts). */
export const DEFAULT_RECORDS_SHARE = 0.1;
/** The share of schedules with writes to the provider that get no answer and land later. */
export const DEFAULT_LATE_WRITES_SHARE = 0.1;
/** The share of schedules with activity calls that take seconds of the workflow's time. */
export const DEFAULT_SLOW_ACTIVITIES_SHARE = 0.05;
/** The share of transactions (of `transaction` and `reuse` schedules) whose input names approvers. */
export const DEFAULT_APPROVAL_SHARE = 0.25;

export interface SeedOutcome {
  seed: number;
  schedule: Schedule;
  findings: Finding[];
  /** Findings of a defect already known and not fixed yet (explore/regressions/*.json with `open`), by its name. */
  known: (Finding & { defect: string })[];
  /** How it ended, in a few words ("completed", "cancelled by request", "stalled"). */
  ended: string;
  /** What the run went through, to see what the schedules reach. */
  coverage: Coverage;
  realMs: number;
}

export interface ExplorerOptions {
  /** Time-skipping servers run side by side (one schedule at a time each). */
  lanes?: number;
  /** Also generate invalid ZIPs when the workflow cannot recover from them (to show the failure). */
  badZips?: boolean;
  /** Another checkout's `workflows/index.ts` to explore instead of this one's (an older version, say). */
  workflows?: string;
  /** The share of seeds that drive a reused referenceId and its event log (`reuse` schedules). */
  reuse?: number;
  /** The share of seeds that drive a bulk send (`bulk` schedules). */
  bulk?: number;
  /** The share of transactions whose input names approvers (when the workflow takes them). */
  approvals?: number;
  /**
   * How often the schedules draw the operator's and the server's moves (deploys, suggested continue-as-new, upkeep
   * walks, terminations), as a multiple of their usual shares: 1 by default, 0 for none.
   */
  operations?: number;
  /** The share of schedules with legal holds and retention walks (when the workflow code has them). */
  records?: number;
  /** The share of schedules with writes to the provider that land late (explore/schedule.ts `addLateWrites`). */
  lateWrites?: number;
  /** The share of schedules with activity calls that take seconds (explore/schedule.ts `addSlowActivities`). */
  slowActivities?: number;
  log?: (line: string) => void;
}

export class Explorer {
  readonly features: GeneratorFeatures;
  readonly workflow: WorkflowFeatures;
  readonly #bundle: WorkflowBundle;
  readonly #replayer: Replayer;
  readonly #free: Lane[];
  readonly #all: Lane[];
  /** Lanes replaced after a run hung (`#replace`): their connections are closed with the explorer. */
  readonly #abandoned: Lane[] = [];
  readonly #waiting: ((lane: Lane) => void)[] = [];
  readonly #log: (line: string) => void;
  readonly #open: Regression[];
  #runs = 0;
  /** Lanes replaced before a schedule because their test server's clock was held (`#cleanLane`). */
  clockLeaks = 0;

  private constructor(
    bundle: WorkflowBundle,
    replayer: Replayer,
    lanes: Lane[],
    features: GeneratorFeatures,
    workflow: WorkflowFeatures,
    log: (line: string) => void,
    open: Regression[],
  ) {
    this.workflow = workflow;
    this.#open = open;
    this.#bundle = bundle;
    this.#replayer = replayer;
    this.#free = [...lanes];
    this.#all = lanes;
    this.features = features;
    this.#log = log;
  }

  static async start(options: ExplorerOptions = {}): Promise<Explorer> {
    const available = await workflowFeatures(options.workflows);
    const features: GeneratorFeatures = {
      maxHistoryEvents: available.maxHistoryEvents,
      // Approvers only for a workflow that takes them: an older bundle is explored as it was.
      approvals: available.approvals ? (options.approvals ?? DEFAULT_APPROVAL_SHARE) : 0,
      // An invalid ZIP is worth generating once the workflow waits for the operator's retryArchive.
      badZips: options.badZips ?? available.retryArchive,
      restarts: true,
      reuse: options.reuse ?? DEFAULT_REUSE_SHARE,
      bulk: options.bulk ?? DEFAULT_BULK_SHARE,
      operations: options.operations ?? 1,
      records: available.records ? (options.records ?? DEFAULT_RECORDS_SHARE) : 0,
      lateWrites: options.lateWrites ?? DEFAULT_LATE_WRITES_SHARE,
      slowActivities: options.slowActivities ?? DEFAULT_SLOW_ACTIVITIES_SHARE,
    };
    const bundle = await bundleWorkflows(options.workflows);
    const lanes = await Promise.all(Array.from({ length: options.lanes ?? 1 }, (_, i) => Lane.start(bundle, `explore-lane-${i + 1}`)));
    return new Explorer(bundle, new Replayer(bundle), lanes, features, available, options.log ?? (() => {}), await openDefects());
  }

  get lanes(): number {
    return this.#all.length;
  }

  schedule(seed: number): Schedule {
    return generateSchedule(seed, this.features);
  }

  /**
   * Runs one schedule on the next free lane and checks it. A run that takes longer than `timeoutMs` of real time
   * (the test server waiting on something that never comes) fails with where it was, and its lane is replaced.
   */
  async run(
    schedule: Schedule,
    log?: (line: string) => void,
    timeoutMs = realTimeBudget(schedule),
  ): Promise<{ observation: Observation; findings: Finding[]; realMs: number }> {
    const lane = await this.#cleanLane();
    const started = Date.now();
    const refusedBefore = lane.refusedCompletions;
    let phase = 'waiting for a lane';
    let timer: NodeJS.Timeout | undefined;
    let watch: NodeJS.Timeout | undefined;
    let observation: Observation;
    const run = ++this.#runs;
    try {
      const running = runSchedule(schedule, {
        lane,
        run,
        features: this.workflow,
        onPhase: (p) => (phase = p),
        ...(log ? { log } : {}),
      });
      // A run abandoned by the timeout goes on failing against its stopped server: nobody waits for it any more.
      running.catch(() => undefined);
      observation = await Promise.race([
        running,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new RunTimeout(`no end after ${timeoutMs} ms of real time; the run was at: ${phase}`)),
            timeoutMs,
          );
        }),
        // A refused completion leaves its workflow without a task for good (a signal's new task is refused the
        // same way: the server dropped the timer without recording it), so the run is over at once.
        new Promise<never>((_, reject) => {
          watch = setInterval(() => {
            if (lane.refusedCompletions > refusedBefore) reject(new RunTimeout(`the test server's timer race at: ${phase}`));
          }, 100);
        }),
      ]);
    } catch (err) {
      if (!(err instanceof RunTimeout)) {
        this.#release(lane);
        throw err;
      }
      // What the server says about the transaction, before its lane goes.
      const where = await Promise.race([
        describeStall(lane, schedule.bulk ? `bulk-x${schedule.seed}-r${run}` : `esign-x${schedule.seed}-${run}`),
        new Promise<string>((resolve) => setTimeout(() => resolve('the server did not answer'), 5_000).unref()),
      ]);
      const race = lane.refusedCompletions > refusedBefore;
      this.#log(`replacing lane ${lane.taskQueue} after a run that hung`);
      this.#release(await this.#replace(lane));
      const cause = race ? `; the test server refused a workflow task completion ("${TEST_SERVER_TIMER_RACE}", sdk-java#2606)` : '';
      throw new RunTimeout(`${err.message}; ${where}${cause}`, race);
    } finally {
      clearTimeout(timer);
      clearInterval(watch);
    }
    this.#release(lane);
    // Checked off the lane: the replay runs while the lane takes the next schedule.
    const findings = await check(observation, this.#replayer);
    return { observation, findings, realMs: Date.now() - started };
  }

  /** Runs the seeds, `lanes` at a time; calls `onOutcome` as each is checked. */
  async explore(seeds: readonly number[], onOutcome?: (outcome: SeedOutcome) => void): Promise<SeedOutcome[]> {
    const outcomes: SeedOutcome[] = [];
    let next = 0;
    const worker = async () => {
      while (next < seeds.length) {
        const seed = seeds[next++]!;
        const schedule = this.schedule(seed);
        let outcome: SeedOutcome;
        try {
          // A stall the test server's timer race caused says nothing of the workflow: the seed runs again.
          const { observation, findings, realMs } = await this.#runPastRace(schedule);
          const coverage = coverageOf(observation);
          // A defect already known (and saved with `open`) is reported as such, not as a new finding.
          const known = findings.flatMap((f) => {
            const defect = this.#open.find(
              (r) => r.open!.check === f.check && r.open!.after !== undefined && (coverage.operations[r.open!.after] ?? 0) > 0,
            );
            return defect ? [{ ...f, defect: defect.name }] : [];
          });
          outcome = {
            seed,
            schedule,
            findings: findings.filter((f) => !known.some((k) => k.check === f.check && k.detail === f.detail)),
            known,
            ended: endedAs(observation),
            coverage,
            realMs,
          };
        } catch (err) {
          // A run that hung, or the explorer itself broke on this seed (a server call failed): reported, not hidden.
          const hung = err instanceof RunTimeout;
          outcome = {
            seed,
            schedule,
            findings: [{ check: 'ended', detail: hung ? err.message : `explorer error: ${(err as Error).stack ?? String(err)}` }],
            known: [],
            ended: hung ? 'hung' : 'explorer error',
            coverage: NO_COVERAGE,
            realMs: 0,
          };
        }
        outcomes.push(outcome);
        onOutcome?.(outcome);
      }
    };
    await Promise.all(Array.from({ length: this.lanes }, worker));
    return outcomes.sort((a, b) => a.seed - b.seed);
  }

  /**
   * Runs a schedule; one the test server's timer race (sdk-java#2606) stopped runs again, up to RACE_ATTEMPTS
   * times in all, since the race depends on real-time timing and seldom repeats. The last stop is reported.
   */
  async #runPastRace(schedule: Schedule): Promise<Awaited<ReturnType<Explorer['run']>>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.run(schedule);
      } catch (err) {
        if (!(err instanceof RunTimeout && err.testServerRace) || attempt >= RACE_ATTEMPTS) throw err;
        this.#log(`seed ${schedule.seed}: the test server's timer race (sdk-java#2606) stopped run ${attempt}; running it again`);
      }
    }
  }

  /** The smallest schedule found that still fails the first check `schedule` failed. */
  async shrink(schedule: Schedule, failed: CheckName, maxRuns = 60): Promise<{ schedule: Schedule; runs: number }> {
    return shrink(schedule, {
      check: failed,
      maxRuns,
      log: this.#log,
      fails: async (candidate) => {
        try {
          // A candidate that hangs says so sooner than the first run had to.
          return (await this.run(candidate, undefined, 30_000)).findings.map((f) => f.check);
        } catch (err) {
          // A run that hung did not end either.
          return err instanceof RunTimeout ? ['ended'] : [];
        }
      },
    });
  }

  async close(): Promise<void> {
    await this.#replayer.close();
    await Promise.all(this.#all.map((lane) => lane.close()));
    await Promise.all(this.#abandoned.map((lane) => lane.release()));
  }

  /** A lane whose run hung: its server is stopped (whatever it still holds) and a fresh one takes its place. */
  async #replace(broken: Lane): Promise<Lane> {
    await Promise.race([broken.abandon().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    this.#abandoned.push(broken);
    const fresh = await Lane.start(this.#bundle, broken.taskQueue);
    this.#all.splice(this.#all.indexOf(broken), 1, fresh);
    return fresh;
  }

  /**
   * A free lane whose test server's clock is free. A lane where a terminate had to drop a task's lock (explore/lane.ts
   * `terminate`), or whose clock something else still holds, would leave the next schedule waiting in real time at its
   * first sleep: it is replaced first, and counted (`clockLeaks`), since a lock no run releases is the test server's.
   */
  async #cleanLane(): Promise<Lane> {
    const lane = await this.#lane();
    if (!lane.clockLeaked && (await lane.clockFree())) return lane;
    this.clockLeaks++;
    this.#log(`replacing lane ${lane.taskQueue}: its test server's clock is held by a workflow that ended mid-task`);
    return this.#replace(lane);
  }

  async #lane(): Promise<Lane> {
    const free = this.#free.pop();
    if (free) return free;
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #release(lane: Lane): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(lane);
    else this.#free.push(lane);
  }
}

export interface Coverage {
  /** Runs of the transaction workflow (more than one: it continued as new). */
  runs: number;
  /** Completions archived after the workflow had ended otherwise (the late path). */
  lateArchives: number;
  /** Planned activity faults that fired. */
  faults: number;
  /** Writes given up on that reached the provider later, by operation (` refused`: the provider refused them then). */
  landedLate: Record<string, number>;
  /** Activity calls that took seconds of the workflow's time. */
  slowCalls: number;
  /** Worker restarts, and the tasks their sticky queues held that went to the new worker. */
  restarts: number;
  tasksHandedBack: number;
  /** Answers to updates by failure type (`WithdrawRefused`, `TransactionFinished`, …) or `ok`. */
  answers: Record<string, number>;
  /** The schedule's kind, its transactions, and the events its log marked failed (the endpoint's budget spent). */
  kind: string;
  transactions: number;
  failedEvents: number;
  /** Archive attempts refused (a bad ZIP), by the transaction or the late path. */
  refusals: number;
  /** Status queries the test server lost to a continue-as-new, given up and excused (explore/queries.ts). */
  lostQueries: number;
  /**
   * The operator's and the server's moves that acted, by kind: a deploy or a suggestion that reached a running run,
   * an upkeep walk, a terminate of a running workflow (`terminate eventLog`, `terminate lateCompletion`), a completion
   * sent again; and `upkeep renewed` (archives renewed) and `continued on a hint` (runs that continued as new after one).
   */
  operations: Record<string, number>;
  /**
   * Transactions whose input named approvers (`transactions`), by what became of them: `sent` (the workflow sent it to
   * its signers), else how it ended unsent (`rejected unsent`, `expired unsent`, `cancelled unsent`, …).
   */
  approvals: Record<string, number>;
}
const NO_COVERAGE: Coverage = {
  runs: 0,
  lateArchives: 0,
  faults: 0,
  landedLate: {},
  slowCalls: 0,
  restarts: 0,
  tasksHandedBack: 0,
  answers: {},
  kind: 'none',
  transactions: 0,
  failedEvents: 0,
  refusals: 0,
  lostQueries: 0,
  operations: {},
  approvals: {},
};

export function coverageOf(o: Observation): Coverage {
  const answers: Record<string, number> = {};
  for (const m of o.messages) {
    if (m.kind === 'query') continue;
    const key = `${m.kind} ${m.outcome === 'ok' ? 'ok' : (m.type ?? m.outcome)}`;
    answers[key] = (answers[key] ?? 0) + 1;
  }
  const result = o.end.kind === 'result' ? o.end.result : undefined;
  return {
    runs: o.histories.filter((h) => h.workflowId === o.workflowId).length,
    lateArchives: o.model.byReference(o.referenceId).filter((t) => t.status === 'completed' && result?.status !== 'completed').length,
    faults: o.model.faultsHit,
    landedLate: landedLateOf(o),
    slowCalls: o.model.slowCalls,
    restarts: o.restarts.count,
    tasksHandedBack: o.restarts.tasksHandedBack,
    answers,
    kind: o.schedule.kind ?? 'transaction',
    transactions: o.bulk ? o.bulk.rows.filter((r) => r.end).length : (o.parts?.length ?? 1),
    failedEvents: o.eventLog?.events.filter((e) => e.state === 'failed').length ?? 0,
    refusals: o.model.refusals.length,
    lostQueries: o.messages.filter((m) => m.kind === 'query' && m.message?.includes(QUERY_LOST_TO_CONTINUE_AS_NEW)).length,
    operations: operationsOf(o),
    approvals: approvalsOf(o),
  };
}

function approvalsOf(o: Observation): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (key: string) => void (out[key] = (out[key] ?? 0) + 1);
  for (const [i, part] of (o.parts ?? []).entries()) {
    if (!part.setup.approval) continue;
    add('transactions');
    const tx = o.model.byReference(o.referenceId).find((t) => t.part === i);
    if (tx?.trail.some((s) => s.by === 'replace to esign_pending')) add('sent');
    else add(`${part.end.kind === 'result' ? part.end.result.status : part.end.kind} unsent`);
  }
  return out;
}

/** The writes that landed late, by operation and whether the provider took them then (`createTransaction`, `updateTransaction refused`). */
function landedLateOf(o: Observation): Record<string, number> {
  const out: Record<string, number> = {};
  for (const what of o.model.landedLate) {
    const key = `${what.split(' ')[0]}${what.endsWith(' refused') ? ' refused' : ''}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

function operationsOf(o: Observation): Record<string, number> {
  const ops = o.operations;
  if (!ops) return {};
  const out = { ...ops.acted };
  const renewed = ops.upkeep.archives().filter((a) => a.renewals.length > 0).length;
  if (renewed > 0) out['upkeep renewed'] = renewed;
  const continued = ops.hints.filter((h) =>
    o.histories.some((x) => x.runId === h.runId && x.history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes),
  ).length;
  if (continued > 0) out['continued on a hint'] = continued;
  // What the retention walks did: purged, or kept past their retention by a hold.
  for (const call of o.records?.purges ?? []) {
    if (call.outcome === 'purged' || call.outcome === 'held') out[`records ${call.outcome}`] = (out[`records ${call.outcome}`] ?? 0) + 1;
  }
  return out;
}

/** What a set of runs reached, in one paragraph. */
export function describeCoverage(outcomes: readonly SeedOutcome[]): string {
  const continued = outcomes.filter((o) => o.coverage.runs > 1);
  const answers = new Map<string, number>();
  for (const o of outcomes) for (const [k, n] of Object.entries(o.coverage.answers)) answers.set(k, (answers.get(k) ?? 0) + n);
  const kinds = new Map<string, number>();
  for (const o of outcomes) kinds.set(o.coverage.kind, (kinds.get(o.coverage.kind) ?? 0) + 1);
  return [
    `kinds: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}`,
    `${outcomes.reduce((n, o) => n + o.coverage.transactions, 0)} transactions`,
    `${outcomes.reduce((n, o) => n + o.coverage.failedEvents, 0)} events marked failed by the log`,
    `${outcomes.reduce((n, o) => n + o.coverage.refusals, 0)} archives refused`,
    `continued as new in ${continued.length} runs (up to ${Math.max(0, ...continued.map((o) => o.coverage.runs))} runs of one transaction)`,
    `${outcomes.reduce((n, o) => n + o.coverage.lateArchives, 0)} completions archived late`,
    `${outcomes.reduce((n, o) => n + o.coverage.faults, 0)} activity faults fired (${outcomes.reduce((n, o) => n + o.coverage.slowCalls, 0)} calls that took seconds)`,
    `writes landed late: ${
      [...sumOf(outcomes.map((o) => o.coverage.landedLate))]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
    `operator's and server's moves: ${
      [...sumOf(outcomes.map((o) => o.coverage.operations))]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
    `approvals in ${outcomes.filter((o) => (o.coverage.approvals.transactions ?? 0) > 0).length} schedules (${
      [...sumOf(outcomes.map((o) => o.coverage.approvals))]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    })`,
    `${outcomes.reduce((n, o) => n + o.coverage.restarts, 0)} worker restarts (${outcomes.reduce((n, o) => n + o.coverage.tasksHandedBack, 0)} tasks moved off a dead worker's queue)`,
    `update answers: ${[...answers]
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  ].join('; ');
}

function sumOf(records: readonly Record<string, number>[]): Map<string, number> {
  const sum = new Map<string, number>();
  for (const r of records) for (const [k, n] of Object.entries(r)) sum.set(k, (sum.get(k) ?? 0) + n);
  return sum;
}

/** The transaction's pending workflow task and activities, and its last events: where a hung run waits. */
async function describeStall(lane: Lane, workflowId: string): Promise<string> {
  const handle = lane.client.workflow.getHandle(workflowId);
  const raw = await handle.describe().then(
    (d) => d.raw,
    (err: unknown) => `describe failed: ${String(err)}`,
  );
  if (typeof raw === 'string') return raw;
  const history = await handle.fetchHistory().catch(() => undefined);
  const failedTask = [...(history?.events ?? [])]
    .reverse()
    .find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes;
  return (
    (failedTask
      ? `last workflow task failure ${proto.temporal.api.enums.v1.WorkflowTaskFailedCause[failedTask.cause ?? 0]}: ${failedTask.failure?.message ?? ''}; `
      : '') +
    `${workflowId} is ${String(raw.workflowExecutionInfo?.status)}, workflow task in flight ${taskInFlight(history)}, ` +
    `pending activities ${JSON.stringify(raw.pendingActivities?.map((a) => ({ type: a.activityType?.name, attempt: a.attempt })) ?? [])}, ` +
    `last events ${(history?.events ?? [])
      .slice(-12)
      .map((e) => eventName(e.eventType))
      .join(' ')}`
  );
}

/** Runs of one seed the test server's timer race may stop before the seed counts as failing. */
const RACE_ATTEMPTS = 4;

/**
 * The real time a schedule may take before it counts as hung: a minute, plus what its status-read outages cost. While
 * the provider does not answer reads, the workflow reads again every 30 s of workflow time, and each read's three
 * attempts wait out their backoff (1 s, 2 s) in real time, as local activities do: the test server cannot skip time
 * while they run. So an outage costs about 6 s of real time per minute it lasts (seed 335: 25 minutes, 2 minutes).
 */
export function realTimeBudget(schedule: Schedule): number {
  const outageMs = (steps: readonly TimedStep[]) => {
    let total = 0;
    for (const down of steps) {
      if (down.kind !== 'providerDown' || down.operation !== 'getTransaction') continue;
      const up = steps.find((s) => s.kind === 'providerUp' && s.operation === 'getTransaction' && s.at > down.at);
      total += (up ? up.at : down.at + 2 * 60 * 60_000) - down.at;
    }
    return total;
  };
  const outage = [schedule.steps, ...(schedule.next ?? []).map((n) => n.steps)].reduce((sum, steps) => sum + outageMs(steps), 0);
  return 60_000 + Math.ceil(outage / 60_000) * 8_000;
}

/** A run that did not finish in real time: the test server waits for something that never comes. */
export class RunTimeout extends Error {
  override readonly name = 'RunTimeout';
  constructor(
    message: string,
    /** The test server refused a workflow task completion during the run (its timer race, sdk-java#2606). */
    readonly testServerRace = false,
  ) {
    super(message);
  }
}

export function endedAs(observation: Observation): string {
  const { end } = observation;
  if (observation.bulk) {
    const batch = observation.bulk.end;
    return batch.kind === 'result' ? `batch ${batch.result.phase}` : `batch ${batch.kind}`;
  }
  switch (end.kind) {
    case 'result':
      return `${end.result.status}${end.result.endedBy ? ` by ${end.result.endedBy}` : ''}`;
    case 'failed':
      return `failed ${end.type ?? ''}`.trim();
    case 'stalled':
      return 'stalled';
    case 'not-started':
      return 'not started';
  }
}
