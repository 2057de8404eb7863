/**
 * Where schedules run: a time-skipping test server of its own (a lane), the
 * workflow code bundled once and shared by every worker, and one replay
 * worker that checks the histories the lanes produce.
 *
 * Time skipping is global to a server: a lane runs one schedule at a time,
 * so each schedule's simulated times mean what they say. Throughput comes
 * from several lanes side by side (explore/explore.ts).
 */
import proto from '@temporalio/proto';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import type { EsignActivities } from '../activities/index.js';
import { ensureTemporalBinaries, executableFor } from '../tools/temporal/binaries.js';
import { workflowsPath } from '../src/worker/create-worker.js';
import { cliTypeOf, esignSearchAttributes } from '../src/definitions/search-attributes.js';
import { LEGAL_HOLDS_WORKFLOW_ID } from '../src/definitions/records.js';
import { createExplorerActivities } from './activities.js';
import { ProviderModel } from './provider-model.js';
import { ServerHints } from './server-hints.js';
import { StickyQueueDrain, StickyQueueSpy } from './sticky-queues.js';
import { millis, openActivities, taskInFlight } from './timers.js';

type DescribeWorkflowExecutionResponse = proto.temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;
type History = proto.temporal.api.history.v1.IHistory;

export type WorkflowBundle = NonNullable<WorkerOptions['workflowBundle']>;

/**
 * The workflows, bundled once: a worker (re)started from the bundle starts in milliseconds. `path` is another
 * checkout's `workflows/index.ts` (to explore an older version); this checkout's by default.
 */
export async function bundleWorkflows(path = workflowsPath): Promise<WorkflowBundle> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const { code } = await bundleWorkflowCode({ workflowsPath: path, logger: quiet });
  return { code };
}

let testServerPath: Promise<string | undefined> | undefined;

/** A time-skipping test server with the workflows' search attributes. */
export async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  testServerPath ??= ensureTemporalBinaries('test-server').then((b) => b.testServer);
  const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: executableFor(await testServerPath) } });
  await registerSearchAttributes(env);
  return env;
}

/** The test server knows no custom search attributes until they are added. */
export async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      esignSearchAttributes.map((sa) => [
        sa.name,
        {
          Keyword: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
          Int: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
          KeywordList: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
        }[cliTypeOf(sa)],
      ]),
    ),
  });
}

/**
 * A time-skipping server with one worker that stays up between schedules:
 * starting a worker costs more than most schedules. Its task queue is the
 * lane's; each schedule registers its activities under its run number, and
 * every activity call is routed to the schedule its workflow belongs to (the
 * run is in every workflow id: the transaction's referenceId, and the
 * provider ids that name its inbox and late completion).
 */
export class Lane {
  readonly env: TestWorkflowEnvironment;
  /** A plain client: the environment's own unlocks time skipping while it waits for a result (explore/driver.ts). */
  readonly client: Client;
  readonly taskQueue: string;
  readonly #bundle: WorkflowBundle;
  readonly #schedules = new Map<number, EsignActivities>();
  /** The worker's way to the server, noting its sticky queues (explore/sticky-queues.ts says why). */
  readonly #spy: StickyQueueSpy;
  readonly #clientConnection: Connection;
  #connection: NativeConnection | undefined;
  #worker: { worker: Worker; running: Promise<void>; stickyBefore: Set<string> } | undefined;
  /** Hands back the tasks left on the sticky queues of workers that were restarted; stopped with the schedule. */
  #drain: StickyQueueDrain | undefined;
  /** Why workers stopped on their own, if any did. */
  readonly workerFailures: string[] = [];
  /**
   * Set when a workflow had to be terminated while it still held the test server's clock: the lane must not take
   * another schedule (explore/explore.ts replaces it).
   */
  clockLeaked = false;

  private constructor(
    env: TestWorkflowEnvironment,
    bundle: WorkflowBundle,
    taskQueue: string,
    spy: StickyQueueSpy,
    connection: Connection,
  ) {
    this.env = env;
    this.#clientConnection = connection;
    this.client = new Client({ connection, namespace: env.namespace ?? 'default' });
    this.#bundle = bundle;
    this.taskQueue = taskQueue;
    this.#spy = spy;
  }

  static async start(bundle: WorkflowBundle, name = 'explore'): Promise<Lane> {
    const env = await startTimeSkippingServer();
    // A connection of the lane's own for its client: a lane that hung is abandoned with calls still retrying on
    // it, and closing it under them would throw from their timers.
    const spy = await StickyQueueSpy.start(env.address, new ServerHints());
    const lane = new Lane(env, bundle, name, spy, await Connection.connect({ address: env.address }));
    await lane.startWorker();
    return lane;
  }

  /** Routes the activities of run `run`'s workflows to `activities` until `forget`. */
  register(run: number, activities: EsignActivities): void {
    this.#schedules.set(run, activities);
  }

  /** Forgets run `run`; returns how many tasks were handed back from restarted workers' queues during it. */
  async forget(run: number): Promise<number> {
    this.#schedules.delete(run);
    // The schedule's workflows are over: nothing is left on a dead worker's queue.
    const drain = this.#drain;
    this.#drain = undefined;
    await drain?.stop();
    return drain?.handedBack ?? 0;
  }

  /**
   * `temporal workflow terminate`, at a moment the test server can take it. The test server holds its clock while a
   * workflow has a workflow task or an activity task outstanding, and releases it when the task completes; a terminate
   * in between drops the task's completion, so the clock stays held for good and every later sleep on this server
   * waits in real time (a real server has no such lock). So the terminate waits, a few seconds of real time at most,
   * until the run has no task outstanding. Time does not move meanwhile (only the driver's sleeps move it), so no new
   * task starts on its own; a run still busy after the wait is terminated anyway and the lane marked `clockLeaked`.
   * Returns whether the run was running and is now terminated.
   */
  async terminate(workflowId: string, reason: string, waitMs = 3_000): Promise<boolean> {
    const handle = this.client.workflow.getHandle(workflowId);
    for (const until = Date.now() + waitMs; ;) {
      const described = await handle.describe().catch(() => undefined);
      if (described?.status.name !== 'RUNNING') return false;
      const history = await handle.fetchHistory().catch(() => undefined);
      const busy = taskInFlight(history) || activityInFlight(history, described.raw);
      if (!busy || Date.now() >= until) {
        const terminated = await handle.terminate(reason).then(
          () => true,
          () => false,
        );
        if (terminated && busy) this.clockLeaked = true;
        return terminated;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /**
   * Whether the test server's clock is free: a sleep of an hour returns at once unless something still holds it. Asked
   * between schedules, when nothing of this lane runs, a held clock is a lock no run will release.
   */
  async clockFree(waitMs = 3_000): Promise<boolean> {
    return Promise.race([
      this.env.sleep(HOUR_MS).then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), waitMs).unref()),
    ]);
  }

  /** Stops the worker and starts another with an empty cache; the tasks the old one would have had go to the new one. */
  async restartWorker(): Promise<void> {
    const old = this.#worker;
    // Between tasks: a worker killed in the middle of one is the chaos run's business (docs/reliability.md), and
    // the SDK's core panics in a background task when a worker shuts down under a local activity.
    for (let waited = 0; old && waited < 2_000; waited += 10) {
      const status = old.worker.getStatus();
      if (status.numInFlightWorkflowActivations === 0 && status.numInFlightActivities === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await this.stopWorker();
    this.#drain ??= new StickyQueueDrain(this.client, this.taskQueue);
    // The old worker's sticky queue: the one first polled while it ran. What a previous restart moved is forgotten.
    this.#drain.moved.length = 0;
    for (const queue of this.#spy.stickyQueues) if (old && !old.stickyBefore.has(queue)) this.#drain.drain(queue);
    await this.startWorker();
  }

  /**
   * Waits (a little real time at most) until each of `workflowIds` has had a task handed back from a dead worker's
   * queue since the restart: it runs on the new worker from then on.
   */
  async moved(workflowIds: readonly string[], timeoutMs = 2_000): Promise<boolean> {
    for (let waited = 0; waited < timeoutMs; waited += 10) {
      if (workflowIds.every((id) => this.#drain?.moved.includes(id))) return true;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return false;
  }

  async startWorker(): Promise<void> {
    const names = Object.keys(createExplorerActivities({ model: new ProviderModel({ uuid: () => '' }) })) as (keyof EsignActivities)[];
    const routed = Object.fromEntries(
      names.map((name) => [
        name,
        (...args: unknown[]) => {
          const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
          // The namespace's one holds register has no run in its id: it is the schedule's that runs (one at a time).
          const run =
            workflowId === LEGAL_HOLDS_WORKFLOW_ID && this.#schedules.size === 1 ? [...this.#schedules.keys()][0]! : runOf(workflowId);
          const activities = this.#schedules.get(run);
          // A workflow of a schedule that is over (it stalled and was reported): it must not touch another's model.
          if (!activities) throw ApplicationFailure.nonRetryable(`no schedule runs workflow ${workflowId}`, 'ExplorerScheduleOver');
          return (activities[name] as (...a: unknown[]) => Promise<unknown>)(...args);
        },
      ]),
    ) as unknown as EsignActivities;
    this.#connection ??= await NativeConnection.connect({ address: this.#spy.address });
    const worker = await Worker.create({
      connection: this.#connection,
      taskQueue: this.taskQueue,
      workflowBundle: this.#bundle,
      activities: routed,
      shutdownGraceTime: '1 second',
    });
    this.#worker = { worker, running: worker.run(), stickyBefore: new Set(this.#spy.stickyQueues) };
  }

  async stopWorker(): Promise<void> {
    const current = this.#worker;
    if (!current) return;
    this.#worker = undefined;
    if (current.worker.getState() === 'RUNNING') current.worker.shutdown();
    await current.running.catch((err: unknown) => this.workerFailures.push(err instanceof Error ? err.message : String(err)));
  }

  async close(): Promise<void> {
    await this.#drain?.stop();
    await this.stopWorker();
    await this.#connection?.close();
    await this.#clientConnection.close();
    await this.#spy.close();
    await this.env.teardown();
  }

  /**
   * Closes what an abandoned lane still holds, once the explorer is done with every run: a test process goes on to
   * other test files (vitest.config.ts, isolate: false), which must not inherit its connections. Best effort: what
   * cannot close (a worker still stuck on its stopped server) is left.
   */
  async release(): Promise<void> {
    for (const close of [() => this.#connection?.close(), () => this.#clientConnection.close(), () => this.env.teardown()])
      await Promise.race([Promise.resolve(close()).catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  }

  /** What the server tells this lane's workflows beyond what the test server does (explore/server-hints.ts). */
  get hints(): ServerHints {
    return this.#spy.hints;
  }

  /** How many workflow task completions the test server refused with its timer race (sdk-java#2606) so far. */
  get refusedCompletions(): number {
    return this.#spy.refusedCompletions;
  }

  /** How many workflow task completions the test server refused as of a closed run, each locking its clock for good. */
  get refusedAsClosed(): number {
    return this.#spy.refusedAsClosed;
  }

  /**
   * Stops the server of a lane whose run hung. Its connections stay open: the abandoned run still has calls on
   * them, which fail and retry against the stopped server, and a connection closed under a retry throws from its
   * timer (an uncaught exception). They are closed when the explorer closes (`release`).
   */
  async abandon(): Promise<void> {
    await Promise.race([
      Promise.all([this.#drain?.stop(), this.stopWorker()]),
      new Promise((resolve) => setTimeout(resolve, 5_000).unref()),
    ]);
    await this.#spy.close().catch(() => undefined);
    // The environment has no way to stop its server without closing its connections; this is what teardown does last.
    const server = (this.env as unknown as { server: Parameters<Runtime['shutdownEphemeralServer']>[0] | 'existing' }).server;
    if (server !== 'existing') {
      await Runtime.instance().shutdownEphemeralServer(server);
      // Stopped once: `release` closes the connections through teardown, which would otherwise stop it again (and say so).
      (this.env as unknown as { server: 'existing' }).server = 'existing';
    }
  }
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * Whether an activity attempt is scheduled or running, which holds the test server's clock (as a workflow task does:
 * explore/timers.ts `taskInFlight`). The history says which activities are open; the server's answer tells an attempt
 * in flight from one waiting for its retry, which holds nothing: an attempt runs from its start (`lastStartedTime`)
 * until the server records its end (`lastAttemptCompleteTime`), and a first attempt has no end yet. A newly scheduled
 * activity may not be in that answer yet. (One moment it cannot tell: a retry whose backoff is over, before a worker
 * polls it.)
 */
function activityInFlight(history: History | undefined, raw: DescribeWorkflowExecutionResponse): boolean {
  return openActivities(history).some((id) => {
    const info = raw.pendingActivities?.find((a) => a.activityId === id);
    // A first attempt has no end yet.
    if (!info?.lastAttemptCompleteTime) return true;
    return millis(info.lastStartedTime) > millis(info.lastAttemptCompleteTime);
  });
}

/** The run a workflow belongs to: `esign-x<seed>-<run>`, an upkeep or retention walk's `esign-upkeep-x<seed>-<run>-<n>`, a bulk send's `bulk-x<seed>-r<run>`, or a provider id (a uuidFactory UUID) after `esign-inbox-`/`esign-late-`. */
export function runOf(workflowId: string): number {
  // The transaction, and its event log (esign-events-<referenceId>).
  const reference = /^esign-(?:events-)?x\d+-(\d+)$/.exec(workflowId);
  if (reference) return Number(reference[1]);
  // An evidence upkeep walk or a records retention walk of the run (esign-upkeep-x<seed>-<run>-<n>, esign-retention-…).
  const upkeep = /^esign-(?:upkeep|retention)-x\d+-(\d+)-\d+$/.exec(workflowId);
  if (upkeep) return Number(upkeep[1]);
  // A bulk send (bulk-x<seed>-r<run>), its rows' transactions (esign-bulk-x<seed>-r<run>.<line>) and their logs.
  const batch = /^(?:esign-(?:events-)?)?bulk-x\d+-r(\d+)(?:\.\d+)?$/.exec(workflowId);
  if (batch) return Number(batch[1]);
  const provider = /^esign-(?:inbox|late)-([0-9a-f]{8})-/.exec(workflowId);
  return provider ? parseInt(provider[1]!, 16) : -1;
}

/**
 * One replay worker for a whole exploration: creating one per history costs
 * more than the replay. Histories are replayed in the order they are given,
 * so each result goes to the oldest waiting caller.
 */
export class Replayer {
  readonly #queue: HistoryAndWorkflowId[] = [];
  readonly #waiting: ((error: string | undefined) => void)[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  readonly #done: Promise<void>;

  constructor(bundle: WorkflowBundle) {
    const feed = async function* (this: Replayer): AsyncGenerator<HistoryAndWorkflowId> {
      for (;;) {
        const next = this.#queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.#closed) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    }.bind(this);
    this.#done = (async () => {
      // A replay worker that breaks (not a history that fails to replay: that is a result) fails what it was
      // given, and a new one takes the rest, so no caller waits forever.
      while (!this.#closed || this.#queue.length > 0) {
        try {
          for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, feed())) {
            const error = result.error;
            this.#waiting.shift()?.(error === undefined ? undefined : error instanceof Error ? error.message : JSON.stringify(error));
          }
          return;
        } catch (err) {
          const message = `the replay worker broke: ${err instanceof Error ? err.message : String(err)}`;
          for (const waiter of this.#waiting.splice(0, this.#waiting.length - this.#queue.length)) waiter(message);
        }
      }
    })();
  }

  /** Replays one history; resolves with why it did not replay, or undefined. */
  replay(workflowId: string, history: HistoryAndWorkflowId['history']): Promise<string | undefined> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#queue.push({ workflowId, history });
      this.#wake?.();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#done;
  }
}
