// The chaos run's workers under Worker Versioning (docs/operations.md): one
// version at the start, then, once in the run, a rolling deploy. The next
// version's workers start beside the old ones and make themselves current;
// the old workers keep serving the runs pinned to them until none is left,
// then stop gracefully, as an operator would retire a version.
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Service } from '../tools/support/service.js';

/** What the deploy did and when (epoch milliseconds, this machine's clock, which the local server shares). */
export interface RollingDeploy {
  deployment: string;
  from: string;
  to: string;
  /** When `to` was seen current with the change propagated to every task queue partition; unset if it never was. */
  currentAt?: number;
  /** Transactions started by then. */
  startedBefore?: number;
  /** When the visibility store last counted a run pinned to `from` still running, and then none. */
  drainedAt?: number;
  /** When the old workers were sent SIGTERM, and when the last of them had exited. */
  stoppingAt?: number;
  stoppedAt?: number;
  /**
   * What showed every partition routing to `to`: the server's propagation state, or each partition asked (that
   * state can stay IN_PROGRESS for ever: temporalio/temporal#11842).
   */
  routingConfirmedBy?: 'the server' | 'each task queue partition';
  /** Why the deploy or the drain failed. */
  failure?: string;
}

const { RoutingConfigUpdateState, TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

/**
 * The server's default partition count (matching.numTaskqueueReadPartitions); deploy/temporal/dynamicconfig.yaml
 * lowers it to 2, and a partition beyond the count answers from the root's routing, so asking four covers both.
 */
const PARTITIONS = 4;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ChaosWorkersOptions {
  count: number;
  /** Everything but the versioning variables. */
  env: Record<string, string>;
  logs: string;
  deployment: string;
  taskQueue: string;
  versions: readonly [from: string, to: string];
  client: Client;
  namespace: string;
  /** No wait of the deploy or the drain lasts beyond this (epoch milliseconds). */
  deadline: number;
  log: (line: string) => void;
}

export class ChaosWorkers {
  /** Every worker started, of either version: all are closed at the end and reported. */
  readonly services: Service[] = [];
  readonly deploy: RollingDeploy;
  #o: ChaosWorkersOptions;
  #current: Service[];
  #old: Service[] = [];
  #retired = new Set<Service>();
  #drain: Promise<void> | undefined;

  constructor(options: ChaosWorkersOptions) {
    this.#o = options;
    this.deploy = { deployment: options.deployment, from: options.versions[0], to: options.versions[1] };
    this.#current = this.#spawn(options.versions[0], (n) => `worker-${n}`);
  }

  /** The build id the schedule's worker kills hit. */
  get currentVersion(): string {
    return this.deploy.currentAt === undefined ? this.deploy.from : this.deploy.to;
  }

  #spawn(buildId: string, name: (n: number) => string): Service[] {
    const spawned = Array.from({ length: this.#o.count }, (_, i) => {
      const env = {
        ...this.#o.env,
        ESIGN_WORKER_DEPLOYMENT: this.#o.deployment,
        ESIGN_WORKER_BUILD_ID: buildId,
        ESIGN_WORKER_SET_CURRENT: 'true',
      };
      return new Service(name(i + 1), 'src/worker/main.ts', env, /worker polling/, join(this.#o.logs, `${name(i + 1)}.log`));
    });
    this.services.push(...spawned);
    return spawned;
  }

  start(): Promise<void> {
    return Promise.all(this.#current.map((s) => s.start())).then(() => undefined);
  }

  async kill(index: number, downMs: number): Promise<void> {
    const w = this.#current[index]!;
    await w.kill();
    await sleep(downMs);
    await w.start();
  }

  /**
   * Starts the next version's workers and returns once the server routes every new workflow to it. The old
   * version's drain goes on in the background (`drained()`); its failure is recorded, never thrown.
   */
  async rollOut(started: () => number): Promise<void> {
    const { from, to } = this.deploy;
    this.#old = this.#current;
    // An old worker restarting from now on (a crash, a lost connection) must rejoin its version, not make it
    // current again: docs/operations.md's warning about ESIGN_WORKER_SET_CURRENT in a deploy.
    for (const s of this.#old) s.setEnv({ ESIGN_WORKER_SET_CURRENT: 'false' });
    // And one that a kill of the schedule's other timeline left booting with the old setting makes its version
    // current before the new one is, not after: start() waits for it (or starts a killed one, with the new setting).
    await Promise.all(this.#old.map((s) => s.start()));
    const next = this.#spawn(to, (n) => `worker-${n}-${to}`);
    const began = performance.now();
    const after = () => `${((performance.now() - began) / 1000).toFixed(1)} s`;
    await Promise.all(next.map((s) => s.start()));
    this.#o.log(`chaos: ${to} polling and made current after ${after()}, ${started()} started`);
    // Each worker's set-current returns once the server accepted it; the task queue's partitions learn of the
    // change after, and until they all have, one may still hand a new workflow to the old version. The server
    // says when they have, except when the version's bookkeeping workflow continues as new in the middle and
    // the news is lost (temporalio/temporal#11842): then the partitions themselves are asked.
    await this.#until(`${to} current on every task queue partition`, async () => {
      const { workerDeploymentInfo: info } = await this.#o.client.workflowService.describeWorkerDeployment({
        namespace: this.#o.namespace,
        deploymentName: this.#o.deployment,
      });
      if (info?.routingConfig?.currentDeploymentVersion?.buildId !== to) return false;
      if (info.routingConfigUpdateState === RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED) {
        this.deploy.routingConfirmedBy = 'the server';
        return true;
      }
      if (!(await this.#everyPartitionRoutesTo(to))) return false;
      this.deploy.routingConfirmedBy = 'each task queue partition';
      return true;
    });
    this.deploy.currentAt = Date.now();
    this.deploy.startedBefore = started();
    this.#current = next;
    this.#o.log(
      `chaos: ${to} current on every partition (confirmed by ${this.deploy.routingConfirmedBy}) after ${after()}, ${started()} started; draining ${from}`,
    );
    this.#drain = this.#drainOld().catch((err: unknown) => {
      this.deploy.failure = `draining ${from}: ${(err as Error).message}`;
    });
  }

  /**
   * The old workers stop only once no running workflow is pinned to their version: a pinned run moves only at
   * its continue-as-new, which an old worker has to make, and without one it would wait for ever.
   */
  async #drainOld(): Promise<void> {
    const { deployment, from } = this.deploy;
    const pinned = `TemporalWorkerDeploymentVersion = '${deployment}:${from}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
    // Twice in a row, with no failed count between: the visibility store is updated after the fact, so a run
    // pinned by a task that completed as the current version changed could be missing from one count.
    let zeros = 0;
    const fail = (err: unknown): never => {
      zeros = 0;
      throw err;
    };
    await this.#until(`no run pinned to ${from}`, async () => {
      const { count } = await this.#o.client.workflow.count(pinned).catch(fail);
      zeros = count === 0 ? zeros + 1 : 0;
      return zeros >= 2;
    });
    this.deploy.drainedAt = Date.now();
    this.deploy.stoppingAt = Date.now();
    this.#o.log(`chaos: ${from} drained; stopping its workers`);
    await Promise.all(this.#old.map((s) => s.stop()));
    for (const s of this.#old) this.#retired.add(s);
    this.deploy.stoppedAt = Date.now();
  }

  /** Whether every partition of the task queue, for workflow and activity tasks, has `buildId` as its current version. */
  async #everyPartitionRoutesTo(buildId: string): Promise<boolean> {
    const { taskQueue } = this.#o;
    for (let p = 0; p < PARTITIONS; p++) {
      for (const taskQueueType of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
        const { versioningInfo } = await this.#o.client.workflowService.describeTaskQueue({
          namespace: this.#o.namespace,
          taskQueue: { name: p === 0 ? taskQueue : `/_sys/${taskQueue}/${p}`, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType,
        });
        if (versioningInfo?.currentDeploymentVersion?.buildId !== buildId) return false;
      }
    }
    return true;
  }

  /** Polls `done` (every second; its errors, as while Temporal restarts, count as not yet) until the deadline. */
  async #until(what: string, done: () => Promise<boolean>): Promise<void> {
    let lastError: Error | undefined;
    while (Date.now() < this.#o.deadline) {
      try {
        if (await done()) return;
        lastError = undefined;
      } catch (err) {
        lastError = err as Error;
      }
      await sleep(1000);
    }
    throw new Error(`gave up waiting for ${what}${lastError ? ` (last error: ${lastError.message})` : ''}`);
  }

  /** Resolves once the old version is drained and stopped, or its drain has failed (see `deploy.failure`). */
  async drained(): Promise<void> {
    await this.#drain;
  }

  /** Every worker not retired, up again (a kill's restart may still be under way). */
  async upForChecks(): Promise<void> {
    await Promise.all(this.services.filter((s) => !this.#retired.has(s)).map((s) => s.start()));
  }
}
