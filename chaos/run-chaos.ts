// The chaos run: the whole system (a Temporal dev server with a persisted
// database, the sandbox injecting faults, the bridge, two versioned workers)
// drives M transactions to completion while a seeded schedule kills workers,
// restarts the bridge, stops Temporal once and rolls the workers out to a new
// version once; part-way through, a bulk-send batch joins them (./bulk.ts).
// On the cluster, two bridges behind the load balancer, each killed in turn,
// and the Temporal services and PostgreSQL fail one by one. Then the checks
// in ./checks.ts and ./bulk-checks.ts decide whether anything was lost or
// duplicated, or ran on a version it should not have.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { getEsignTransaction, startEsignTransaction } from '../src/client/transactions.js';
import { newCodecKeys } from '../src/codec/aes-gcm-codec.js';
import { dataConverterFromEnv } from '../src/codec/data-converter.js';
import { EsignClient } from '../src/esign/client.js';
import type { FaultConfigInput } from '../src/client/sandbox-control.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { ensureTemporalBinaries } from '../tools/temporal/binaries.js';
import { freePort } from '../tools/support/net.js';
import { issueSigningUrlUpdate, statusQuery, type EsignTransactionResult } from '../src/definitions/transaction.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { SandboxControlError } from '../src/client/sandbox-control.js';
import { prebuiltBundle } from '../tools/support/bundle.js';
import { launchSandbox, sandboxBridgeEnv, sandboxWorkerEnv } from '../tools/support/sandbox-process.js';
import { RoundRobinBalancer } from '../tools/cluster/balancer.js';
import { checkRun, type ChaosChecks } from './checks.js';
import { ChaosBatch } from './bulk.js';
import type { BatchChecks } from './bulk-checks.js';
import { clientRetrying, Final, ignoreEnded } from './client-calls.js';
import {
  chaosSchedule,
  defaultFaults,
  describeAction,
  transactionPlan,
  type ChaosAction,
  type ChaosEvent,
  type Scenario,
} from './schedule.js';
import { ChaosReceiver } from './receiver.js';
import { clusterTemporal, devServerTemporal } from './temporal.js';
import { ChaosWorkers, type RollingDeploy } from './workers.js';
import { Service } from '../tools/support/service.js';

export interface ChaosOptions {
  seed: number;
  transactions: number;
  /** Transactions driven at once. */
  concurrency?: number;
  /** Faults the sandbox injects (defaults: the issue's mix). */
  faults?: FaultConfigInput;
  /** Gives up on transactions still unfinished after this long. */
  timeoutMs?: number;
  /** Keep the work directory (logs, databases, archives) even when the run is clean. */
  keep?: boolean;
  /**
   * Run on the production topology (PostgreSQL, the Temporal services as separate
   * processes; docs/cluster.md) instead of the dev server: the schedule then kills
   * and restarts the history, matching and frontend services and PostgreSQL.
   */
  cluster?: boolean;
  /** Rows of the bulk-send batch submitted part-way through (default 20). */
  batchRows?: number;
  log?: (line: string) => void;
}

export interface ChaosReport extends ChaosChecks {
  seed: number;
  transactions: number;
  concurrency: number;
  seconds: number;
  faults: FaultConfigInput;
  events: { afterStarted: number; description: string; at: number }[];
  injected: Record<string, number>;
  topology: 'dev server' | 'cluster';
  clientRetries: Record<string, number>;
  serviceRestarts: Record<string, { kills: number; unexpectedExits: number }>;
  /** Start to result of each transaction, in seconds: p50 and the slowest. */
  durations: { p50: number; max: number; slowest: string };
  /** The workers' rolling deploy, as it happened; where the transactions ran is in `versions`. */
  deploy: RollingDeploy;
  /** The bulk-send batch; its transactions are also in the counts above. Absent when it was never submitted. */
  batch?: BatchChecks;
  workDir: string;
}

export { defaultFaults } from './schedule.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const isFinished = (phase: string) => ['completed', 'declined', 'expired', 'cancelled', 'deleted'].includes(phase);

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { seed, transactions: M } = options;
  const concurrency = options.concurrency ?? Math.min(25, M);
  const faults = options.faults ?? defaultFaults(seed);
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const t0 = performance.now();
  const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);

  const { cli } = await ensureTemporalBinaries('cli');
  const work = await mkdtemp(join(tmpdir(), `esign-chaos-${seed}-`));
  const logs = join(work, 'logs');
  const docs = join(work, 'docs');
  const archiveDir = join(work, 'archive');
  const templateStore = join(work, 'templates');
  await Promise.all([mkdir(logs), mkdir(docs), mkdir(templateStore)]);
  const pdf = join(docs, 'agreement.pdf');
  await writeFile(pdf, await samplePdf('Agreement under chaos'));
  log(`chaos: seed ${seed}, ${M} transactions, work dir ${work}`);

  // ------------------------------------------------------------ the system
  const temporal = options.cluster ? await clusterTemporal(work, cli!, logs) : await devServerTemporal(work, cli!);
  const address = temporal.address;
  const taskQueue = 'esign-chaos';
  // CHAOS_CODEC_KEYS lets a kept run's encrypted histories be read (and replayed) afterwards.
  const codecKeys = process.env.CHAOS_CODEC_KEYS ?? newCodecKeys('chaos-1');
  // The dev stack's one bridge; the production topology's two behind a round-robin balancer (docs/cluster.md).
  const bridgePorts = await Promise.all(Array.from({ length: options.cluster ? 2 : 1 }, () => freePort()));
  const balancer = bridgePorts.length > 1 ? new RoundRobinBalancer(bridgePorts.map((p) => `http://127.0.0.1:${p}`)) : undefined;
  const webhookBase = balancer ? await balancer.listen() : `http://127.0.0.1:${bridgePorts[0]}`;
  // The integrator's backend: every event signed with its secret, checked for duplicates and losses.
  const callbackSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = new ChaosReceiver(callbackSecret);
  await receiver.start();
  const sandbox = await launchSandbox(join(work, 'sandbox'), {
    SANDBOX_WEBHOOK_URLS: `${webhookBase}/webhooks/esign`,
    SANDBOX_FAULTS: JSON.stringify(faults),
  });
  const common = {
    TEMPORAL_ADDRESS: address,
    ESIGN_TASK_QUEUE: taskQueue,
    ESIGN_CODEC_KEYS: codecKeys,
    ESIGN_METRICS_ADDRESS: '',
    ESIGN_MIN_RECONCILE_INTERVAL: '1 second',
    ESIGN_CALLBACK_SECRETS: callbackSecret,
    ESIGN_ALLOWED_URLS: receiver.url,
  };
  const bridges = bridgePorts.map((port, i) => {
    const name = bridgePorts.length > 1 ? `bridge-${i + 1}` : 'bridge';
    return new Service(
      name,
      'src/bridge/main.ts',
      { ...common, BRIDGE_PORT: String(port), ...sandboxBridgeEnv(sandbox), LOG_LEVEL: 'info' },
      /listening/,
      join(logs, `${name}.log`),
    );
  });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv({ ESIGN_CODEC_KEYS: codecKeys })! });
  const provider = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token });
  // Both versions run the same bundle: what the deploy exercises is the routing, not a change of code.
  const workers = new ChaosWorkers({
    count: 2,
    env: {
      ...common,
      ESIGN_WORKFLOW_BUNDLE: await prebuiltBundle(work),
      // Every completed ZIP is verified as in production: seals chained to the sandbox CA, certificate of completion required.
      ...sandboxWorkerEnv(sandbox, { archive: archiveDir, documents: docs }),
      ESIGN_TEMPLATE_STORE: templateStore,
      ESIGN_SHUTDOWN_GRACE: '2 seconds',
      LOG_LEVEL: 'info',
    },
    logs,
    deployment: 'esign-chaos',
    taskQueue,
    versions: ['v1', 'v2'],
    client,
    namespace: client.options.namespace,
    deadline,
    log,
  });
  const services = () => [...bridges, ...workers.services];
  let clean = false;

  try {
    const { retrying, counts: clientRetries } = clientRetrying(deadline);
    const batch = await ChaosBatch.create(
      { client, provider, control: sandbox.control, taskQueue, seed, retrying, deadline, log },
      { storeDir: templateStore, rows: options.batchRows ?? 20, callbackUrl: `${receiver.url}/events` },
    );
    await Promise.all([...bridges.map((s) => s.start()), workers.start()]);

    // ---------------------------------------------------- chaos schedule
    const schedule = chaosSchedule({
      seed,
      transactions: M,
      workers: 2,
      bridges: bridges.length,
      cluster: options.cluster ?? false,
    });
    let started = 0;
    let driversDone = false;
    const performed: ChaosReport['events'] = [];
    // A Temporal outage and the deploy take turns. Each is a test of its own, and a restart in the middle of the
    // deploy can hold the new version back for a minute while the server recovers its deployment bookkeeping,
    // by when no transaction is left to start on it.
    let turn: Promise<unknown> = Promise.resolve();
    const inTurn = (fn: () => Promise<void>): Promise<void> => {
      const mine = turn.then(fn);
      turn = mine.catch(() => undefined);
      return mine;
    };
    const perform = async (action: ChaosAction) => {
      if (action.kind === 'kill-worker') {
        await workers.kill(action.worker, action.downMs);
      } else if (action.kind === 'rolling-deploy') {
        await inTurn(() => workers.rollOut(() => started));
      } else if (action.kind === 'bulk-send') {
        await batch.submit(started);
      } else if (action.kind === 'restart-bridge') {
        const b = bridges[action.bridge ?? 0]!;
        await b.kill();
        await sleep(action.downMs);
        await b.start();
      } else {
        await inTurn(() => temporal.perform(action));
      }
    };
    const play = async (events: ChaosEvent[]) => {
      for (const event of events) {
        while (started < event.afterStarted && !driversDone) await sleep(50);
        const at = (performance.now() - t0) / 1000;
        const description = describeAction(event.action, workers.currentVersion);
        log(`chaos: [${at.toFixed(1)} s, ${started} started] ${description}`);
        await perform(event.action);
        performed.push({ afterStarted: event.afterStarted, description, at });
      }
    };
    // The deploy keeps its own time, as a real one does not wait for a worker to come back: behind slow restarts
    // it would come so late that the new version carried nothing; so does the batch. No timeline is left
    // unhandled while the drivers run: a failed restart, deploy or submission becomes a problem in the report.
    const ownTime = (e: ChaosEvent) => e.action.kind === 'rolling-deploy' || e.action.kind === 'bulk-send';
    let deployOver = false;
    const deployTimeline = play(schedule.filter((e) => e.action.kind === 'rolling-deploy'));
    void deployTimeline.then(
      () => (deployOver = true),
      () => (deployOver = true),
    );
    const monkey: Promise<Error | undefined> = Promise.allSettled([
      play(schedule.filter((e) => !ownTime(e))),
      deployTimeline,
      play(schedule.filter((e) => e.action.kind === 'bulk-send')),
    ]).then((outcomes) => outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error) : undefined)).find(Boolean));

    // ------------------------------------------------- driving the users
    const within = <T>(ms: number, fn: () => Promise<T>) => client.withDeadline(Date.now() + ms, fn);
    const sign = async (transactionId: string, participantId: string) => {
      try {
        await sandbox.control.signAs(transactionId, participantId);
      } catch (err) {
        // A retried sign whose first attempt went through.
        if (err instanceof SandboxControlError && err.status === 409 && /already signed|already completed/.test(err.message)) return;
        throw err;
      }
    };
    const { participantCounts, scenarios, raceDelaysMs } = transactionPlan(seed, M);
    const deployAt = schedule.find((e) => e.action.kind === 'rolling-deploy')?.afterStarted ?? M;

    const results = new Map<string, EsignTransactionResult | Error>();
    const planned = new Map<string, Scenario>();
    const durations: [string, number][] = [];
    const drive = async (i: number) => {
      const referenceId = `chaos-${seed}-${i}`;
      const scenario = scenarios[i]!;
      planned.set(referenceId, scenario);
      const began = performance.now();
      const participants = Array.from({ length: participantCounts[i]! }, (_, p) => ({
        id: crypto.randomUUID(),
        email: `signer${p}@example.com`,
        firstName: 'Chaos',
        lastName: `Signer ${p}`,
        authenticationType: 'none' as const,
        twoFactorContact: 'email' as const,
      }));
      const input: EsignTransactionInput = {
        referenceId,
        documents: [
          {
            title: 'Agreement',
            source: { path: pdf },
            tags: participants.map((_, p) => ({
              type: 'SIGNATURETEMPLATE' as const,
              x: 72,
              y: 120 + 60 * p,
              width: 200,
              height: 30,
              page: 0,
              signerIndex: p,
            })),
          },
        ],
        participants,
        notifyParticipants: { email: false },
        // Short enough that a dropped webhook costs seconds, not an hour.
        reconcileInterval: '5 seconds',
        callbackUrl: `${receiver.url}/events`,
        // The race: signatures land around a deadline a few seconds away.
        ...(scenario === 'deadline-race' ? { signingDeadline: '8 seconds' } : {}),
      };
      // The last few start once the new version is current, so it carries transactions however slow the machine
      // (on a loaded one the deploy can finish after every other start). Never before the deploy is due.
      if (i >= Math.max(deployAt, M - 3)) while (workers.deploy.currentAt === undefined && !deployOver) await sleep(200);
      try {
        await retrying('start', () => within(10_000, () => startEsignTransaction(client, input, { taskQueue })));
        started++;
        const handle = getEsignTransaction(client, referenceId);
        const status = await retrying('query', async () => {
          const s = await within(10_000, () => handle.query(statusQuery));
          if (isFinished(s.phase)) {
            if (scenario === 'deadline-race') return s; // the deadline may win before anyone signs
            throw new Final(`ended ${s.phase} before signing`);
          }
          if (!s.transactionId) throw new Error('not created yet');
          return s;
        });
        const participantIds = participants.map((p) => p.id);
        if (!isFinished(status.phase)) {
          await retrying('signing URL', () =>
            within(15_000, () => handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds }] })).catch((err: unknown) => {
              // The deadline may end a racing transaction while its URL is asked for.
              if (scenario === 'deadline-race' && err instanceof WorkflowUpdateFailedError) return undefined;
              throw err;
            }),
          );
        }
        const tx = status.transactionId!;
        if (scenario === 'sign') {
          for (const id of participantIds) await retrying('sign', () => sign(tx, id));
        } else if (scenario === 'decline') {
          await retrying('decline', () => ignoreEnded(() => sandbox.control.declineAs(tx, participantIds.at(-1)!, 'chaos says no')));
        } else if (scenario === 'deadline-race') {
          // Sign just before or just after the deadline: either the signature or the withdraw wins, never both.
          await sleep(raceDelaysMs[i]!);
          for (const id of participantIds) await retrying('sign', () => ignoreEnded(() => sign(tx, id)));
        } else {
          const end = ({ 'provider-cancel': 'cancelled', 'provider-expire': 'expired', 'provider-delete': 'deleted' } as const)[scenario];
          await retrying('provider end', () => ignoreEnded(() => sandbox.control.forceEnd(tx, end)));
        }
        const result = await retrying('result', async () => {
          try {
            return await handle.result();
          } catch (err) {
            if (err instanceof WorkflowFailedError) throw new Final(`workflow failed: ${err.cause?.message ?? err.message}`);
            throw err;
          }
        });
        results.set(referenceId, result);
        durations.push([referenceId, (performance.now() - began) / 1000]);
      } catch (err) {
        results.set(referenceId, err as Error);
      }
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < M) await drive(next++);
      }),
    );
    driversDone = true;
    const chaosError = await monkey;
    // Before the drain: a batch pinned to the old version holds it until the batch moves or ends.
    await batch.finish();
    // The old version's runs have all ended with their transactions, so its drain finishes now, if not before.
    await workers.drained();
    // All up for the checks, but the retired version's workers.
    await Promise.all([...bridges.map((s) => s.start()), workers.upForChecks()]);
    const seconds = (performance.now() - t0) / 1000;
    log(`chaos: all ${M} transactions returned after ${seconds.toFixed(1)} s; checking`);

    // ---------------------------------------------------------- checking
    await sandbox.control.setFaults({});
    const injected = await sandbox.control.injectedFaults();
    await batch.addResults(results, planned);
    const checks = await checkRun({
      client,
      provider,
      control: sandbox.control,
      archiveDir,
      results,
      planned,
      receiver,
      participants: (ref) => batch.participantsOf(ref) ?? participantCounts[Number(ref.slice(`chaos-${seed}-`.length))]!,
      referencePrefixes: [`chaos-${seed}-`, ...batch.referencePrefixes],
      deploy: workers.deploy,
    });
    const batchChecks = await batch.check(archiveDir, workers.deploy, checks);
    if (chaosError) checks.problems.unshift(`the chaos schedule itself failed: ${chaosError.message}`);
    clean = checks.problems.length === 0;
    durations.sort((a, b) => a[1] - b[1]);
    return {
      durations: {
        p50: durations[Math.floor(durations.length / 2)]?.[1] ?? 0,
        max: durations.at(-1)?.[1] ?? 0,
        slowest: durations.at(-1)?.[0] ?? '-',
      },
      seed,
      topology: options.cluster ? 'cluster' : 'dev server',
      transactions: M,
      concurrency,
      seconds,
      faults,
      events: performed.sort((a, b) => a.at - b.at),
      injected,
      clientRetries,
      serviceRestarts: Object.fromEntries(services().map((s) => [s.name, { kills: s.kills, unexpectedExits: s.unexpectedExits }])),
      deploy: workers.deploy,
      ...(batchChecks ? { batch: batchChecks } : {}),
      workDir: work,
      ...checks,
    };
  } finally {
    await provider.close();
    await connection.close();
    await Promise.all(services().map((s) => s.close()));
    await sandbox.stop();
    await balancer?.close();
    await receiver.close();
    await temporal.stop();
    if (clean && !options.keep) await rm(work, { recursive: true, force: true });
    else log(`chaos: logs, databases and archives kept in ${work}`);
  }
}
