// The chaos run: the whole system (a Temporal dev server with a persisted
// database, the sandbox injecting faults, the bridge, two workers) drives M
// transactions to completion while a seeded schedule kills workers, restarts
// the bridge and stops Temporal once. On the cluster, two bridges behind the
// load balancer, each killed in turn, and the Temporal services and PostgreSQL
// fail one by one. Then the checks in ./checks.ts decide whether anything was
// lost or duplicated.
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { startDevServer } from '../src/temporal/dev-server.js';
import { getEsignTransaction, startEsignTransaction } from '../src/client/transactions.js';
import { newCodecKeys } from '../src/codec/aes-gcm-codec.js';
import { dataConverterFromEnv } from '../src/codec/data-converter.js';
import { EsignClient } from '../src/esign/client.js';
import type { FaultConfigInput } from '../src/sandbox/faults.js';
import { samplePdf } from '../src/sandbox/pdf.js';
import { ensureTemporalBinaries } from '../src/temporal/binaries.js';
import { freePort } from '../src/util/net.js';
import { seededRandom } from '../src/util/seeded-random.js';
import { issueSigningUrlUpdate, statusQuery, type EsignTransactionResult } from '../src/definitions/transaction.js';
import type { EsignTransactionInput } from '../src/transaction/input.js';
import { SandboxControlError } from '../src/sandbox/control-client.js';
import { prebuiltBundle } from '../src/tools/bundle.js';
import { launchSandbox, sandboxWorkerEnv } from '../src/tools/sandbox-process.js';
import { RoundRobinBalancer } from '../src/cluster/balancer.js';
import { PostgresServer } from '../src/cluster/postgres.js';
import { freeClusterPorts, setupNamespace, setupSchemas, TemporalCluster } from '../src/cluster/temporal.js';
import { ensureTemporalServer } from '../src/cluster/topology.js';
import { checkRun, type ChaosChecks } from './checks.js';
import { chaosSchedule, describeAction, type ChaosAction, type Scenario } from './schedule.js';
import { ChaosReceiver } from './receiver.js';
import { Service } from '../src/tools/service.js';

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
  workDir: string;
}

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Errors that retrying cannot fix: the run reports them instead of looping. */
class Final extends Error {}

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
  await Promise.all([mkdir(logs), mkdir(docs)]);
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
      { ...common, BRIDGE_PORT: String(port), ESIGN_WEBHOOK_SECRETS: sandbox.webhookSecret, LOG_LEVEL: 'info' },
      /listening/,
      join(logs, `${name}.log`),
    );
  });
  const bundle = await prebuiltBundle(work);
  const workers = [1, 2].map(
    (n) =>
      new Service(
        `worker-${n}`,
        'src/worker/main.ts',
        {
          ...common,
          ESIGN_WORKFLOW_BUNDLE: bundle,
          // Every completed ZIP is verified as in production: seals chained to the sandbox CA, certificate of completion required.
          ...sandboxWorkerEnv(sandbox, { archive: archiveDir, documents: docs }),
          ESIGN_SHUTDOWN_GRACE: '2 seconds',
          LOG_LEVEL: 'info',
        },
        /worker polling/,
        join(logs, `worker-${n}.log`),
      ),
  );
  const services = [...bridges, ...workers];
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv({ ESIGN_CODEC_KEYS: codecKeys })! });
  const provider = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token });
  let clean = false;

  try {
    await Promise.all(services.map((s) => s.start()));

    // ---------------------------------------------------- chaos schedule
    const schedule = chaosSchedule({
      seed,
      transactions: M,
      workers: workers.length,
      bridges: bridges.length,
      cluster: options.cluster ?? false,
    });
    let started = 0;
    let driversDone = false;
    const performed: ChaosReport['events'] = [];
    const perform = async (action: ChaosAction) => {
      if (action.kind === 'kill-worker') {
        const w = workers[action.worker]!;
        await w.kill();
        await sleep(action.downMs);
        await w.start();
      } else if (action.kind === 'restart-bridge') {
        const b = bridges[action.bridge ?? 0]!;
        await b.kill();
        await sleep(action.downMs);
        await b.start();
      } else {
        await temporal.perform(action);
      }
    };
    // Never left unhandled while the drivers run: a failed restart becomes a problem in the report.
    const monkey: Promise<Error | undefined> = (async () => {
      for (const event of schedule) {
        while (started < event.afterStarted && !driversDone) await sleep(50);
        const at = (performance.now() - t0) / 1000;
        log(`chaos: [${at.toFixed(1)} s, ${started} started] ${describeAction(event.action)}`);
        await perform(event.action);
        performed.push({ afterStarted: event.afterStarted, description: describeAction(event.action), at });
      }
    })().then(
      () => undefined,
      (err: unknown) => err as Error,
    );

    // ------------------------------------------------- driving the users
    const clientRetries: Record<string, number> = {};
    const retrying = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn();
        } catch (err) {
          if (err instanceof Final || Date.now() > deadline) throw err;
          clientRetries[what] = (clientRetries[what] ?? 0) + 1;
          await sleep(Math.min(2000, 250 * attempt));
        }
      }
    };
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
    /** A provider-side action that lost a race (or a retry of one that went through): the checks judge the end. */
    const ignoreEnded = async (action: () => Promise<unknown>) => {
      try {
        await action();
      } catch (err) {
        if (err instanceof SandboxControlError && err.status === 409) return;
        throw err;
      }
    };
    const random = seededRandom(seed);
    const participantCounts = Array.from({ length: M }, () => (random() < 0.3 ? 2 : 1));
    // Most transactions are signed; a tenth each declines, is ended by the provider, or races its deadline (seeded shuffle).
    const tenth = M >= 10 ? Math.floor(M / 10) : 0;
    const providerEnds = ['provider-cancel', 'provider-expire', 'provider-delete'] as const;
    const scenarios: Scenario[] = [
      ...Array.from({ length: tenth }, () => 'decline' as const),
      ...Array.from({ length: tenth }, (_, k) => providerEnds[k % 3]!),
      ...Array.from({ length: tenth }, () => 'deadline-race' as const),
    ];
    while (scenarios.length < M) scenarios.push('sign');
    for (let k = scenarios.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [scenarios[k], scenarios[j]] = [scenarios[j]!, scenarios[k]!];
    }
    const raceDelaysMs = Array.from({ length: M }, () => 6_000 + random() * 4_000);

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
    await Promise.all(services.map((s) => s.start())); // all up for the checks
    const seconds = (performance.now() - t0) / 1000;
    log(`chaos: all ${M} transactions returned after ${seconds.toFixed(1)} s; checking`);

    // ---------------------------------------------------------- checking
    await sandbox.control.setFaults({});
    const injected = await sandbox.control.injectedFaults();
    const checks = await checkRun({
      client,
      provider,
      control: sandbox.control,
      archiveDir,
      results,
      planned,
      receiver,
      participants: participantCounts,
      referencePrefix: `chaos-${seed}-`,
    });
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
      events: performed,
      injected,
      clientRetries,
      serviceRestarts: Object.fromEntries(services.map((s) => [s.name, { kills: s.kills, unexpectedExits: s.unexpectedExits }])),
      workDir: work,
      ...checks,
    };
  } finally {
    await provider.close();
    await connection.close();
    await Promise.all(services.map((s) => s.close()));
    await sandbox.stop();
    await balancer?.close();
    await receiver.close();
    await temporal.stop();
    if (clean && !options.keep) await rm(work, { recursive: true, force: true });
    else log(`chaos: logs, databases and archives kept in ${work}`);
  }
}

/** The Temporal side of a chaos run, and how the schedule breaks it. */
interface ChaosTemporal {
  address: string;
  perform(action: Exclude<ChaosAction, { kind: 'kill-worker' | 'restart-bridge' }>): Promise<void>;
  stop(): Promise<void>;
}

/** The dev server with a persisted database: the schedule stops and restarts it whole. */
async function devServerTemporal(work: string, cli: string): Promise<ChaosTemporal> {
  const port = await freePort();
  const start = () =>
    startDevServer({
      cliPath: cli,
      port,
      dbFilename: join(work, 'temporal.sqlite'),
      // Its own errors during the planned restart are expected noise; the checks are the verdict.
      log: { format: 'pretty', level: 'never' },
    });
  let server = await start();
  return {
    address: `127.0.0.1:${port}`,
    async perform(action) {
      await server.teardown();
      await sleep(action.downMs);
      server = await start();
    },
    stop: () => server.teardown(),
  };
}

/** PostgreSQL and the four Temporal services, each process broken on its own. */
async function clusterTemporal(work: string, cli: string, logs: string): Promise<ChaosTemporal> {
  const logFile = (name: string) => createWriteStream(join(logs, `${name}.log`), { flags: 'a' });
  const serverDir = await ensureTemporalServer();
  const pg = new PostgresServer({ dataDir: join(work, 'postgres'), port: await freePort(), log: logFile('postgres') });
  await pg.start();
  const cluster = new TemporalCluster({ serverDir, pg, ports: await freeClusterPorts(), logs: (s) => logFile(`temporal-${s}`) });
  try {
    await setupSchemas(serverDir, pg);
    await cluster.start();
    await setupNamespace(cli, cluster.address);
  } catch (err) {
    await cluster.stop();
    await pg.stop();
    throw err;
  }
  return {
    address: cluster.address,
    async perform(action) {
      if (action.kind === 'kill-temporal-service') {
        await cluster.kill(action.service);
        await sleep(action.downMs);
        await cluster.startService(action.service);
      } else if (action.kind === 'restart-postgres') {
        await pg.kill();
        await sleep(action.downMs);
        await pg.start();
      } else {
        throw new Error(`${action.kind} is a dev-server action`);
      }
    },
    async stop() {
      await cluster.stop();
      await pg.stop();
    },
  };
}
