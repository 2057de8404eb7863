import { execFile } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { codecKeysFromEnv } from '../../src/codec/data-converter.js';
import type { FaultConfigInput } from '../../src/client/sandbox-control.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { ensureTemporalBinaries } from '../temporal/binaries.js';
import { prebuiltBundle } from '../support/bundle.js';
import { projectRoot } from '../support/launch.js';
import { launchSandbox, sandboxBridgeEnv, sandboxWorkerEnv, type SandboxProcess } from '../support/sandbox-process.js';
import { Service } from '../support/service.js';
import { freePort } from '../support/net.js';
import { RoundRobinBalancer } from './balancer.js';
import { PostgresServer } from './postgres.js';
import { DEFAULT_PORTS, freeClusterPorts, setupNamespace, setupSchemas, TemporalCluster } from './temporal.js';

const run = promisify(execFile);

/** Builds (once, cached outside the clone) or finds the Temporal server and its schema tool. */
export async function ensureTemporalServer(): Promise<string> {
  const { stdout } = await run('bash', [join(projectRoot, 'scripts/ensure-temporal-server.sh')], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim().split('\n').at(-1)!;
}

export interface TopologyOptions {
  /** Everything the topology keeps: PostgreSQL's data, the sandbox, archives, logs. */
  workDir: string;
  /** Fixed ports (`npm run cluster`), or free ones (tests, chaos, benchmarks). */
  fixedPorts?: boolean;
  workers?: number;
  bridges?: number;
  taskQueue?: string;
  sandboxFaults?: FaultConfigInput;
  /** Extra environment for the workers (e.g. the callback secret and allowed URLs). */
  workerEnv?: Record<string, string>;
  log?: (line: string) => void;
}

export interface Topology {
  pg: PostgresServer;
  temporal: TemporalCluster;
  /** The frontend's address, for clients and workers. */
  address: string;
  namespace: string;
  taskQueue: string;
  codecKeys: string;
  /** The file the codec keys are kept in (0600): ESIGN_CODEC_KEYS_FILE for the CLI. */
  codecKeysFile: string;
  sandbox: SandboxProcess;
  workers: Service[];
  bridges: Service[];
  balancer: RoundRobinBalancer;
  archiveDir: string;
  documentsDir: string;
  logsDir: string;
  stop(): Promise<void>;
}

/**
 * The production topology on one machine, as separate processes: PostgreSQL,
 * the Temporal server's four services (deploy/temporal/config.yaml), the
 * namespace and search attributes (deploy/temporal/setup-namespace.sh), the
 * provider sandbox, N workers and M bridges behind a round-robin balancer.
 * The same layout as docker-compose.yml, and as a Kubernetes deployment.
 */
export async function startTopology(options: TopologyOptions): Promise<Topology> {
  const log = options.log ?? (() => undefined);
  const fixed = options.fixedPorts ?? false;
  const work = options.workDir;
  const logsDir = join(work, 'logs');
  const documentsDir = join(work, 'documents');
  const archiveDir = join(work, 'archive');
  await Promise.all([mkdir(logsDir, { recursive: true }), mkdir(documentsDir, { recursive: true })]);
  const logFile = (name: string) => createWriteStream(join(logsDir, `${name}.log`), { flags: 'a' });

  const serverDir = await ensureTemporalServer();
  const { cli } = await ensureTemporalBinaries('cli');
  // Whatever started is stopped again if a later step fails: no PostgreSQL or server left behind.
  const started: (() => Promise<unknown>)[] = [];
  try {
    const pg = new PostgresServer({
      dataDir: join(work, 'postgres'),
      port: fixed ? 5432 + 10_000 : await freePort(),
      log: logFile('postgres'),
    });
    await pg.start();
    started.push(() => pg.stop());
    log(`postgres     127.0.0.1:${pg.port} (data ${pg.dataDir})`);
    await setupSchemas(serverDir, pg);
    log('schemas      temporal, temporal_visibility: created or upgraded');

    const ports = fixed ? DEFAULT_PORTS : await freeClusterPorts();
    const temporal = new TemporalCluster({ serverDir, pg, ports, logs: (s) => logFile(`temporal-${s}`) });
    started.push(() => temporal.stop());
    await temporal.start();
    log(`temporal     frontend ${temporal.address}; history, matching and worker services as separate processes`);
    const namespace = 'default';
    await setupNamespace(cli!, temporal.address, namespace);
    log(`namespace    ${namespace}, with the Esign* search attributes`);

    const taskQueue = options.taskQueue ?? 'esign-transactions';
    // Workers, bridges and clients share the payload keys; kept with the cluster's data so a restart reads its histories.
    const keysFile = join(work, 'codec.keys');
    const codecKeys = codecKeysFromEnv() ?? (existsSync(keysFile) ? (await readFile(keysFile, 'utf8')).trim() : newCodecKeys('cluster-1'));
    await writeFile(keysFile, `${codecKeys}\n`, { mode: 0o600 });
    const bridgeCount = options.bridges ?? 2;
    const bridgePorts = await Promise.all(Array.from({ length: bridgeCount }, (_, i) => (fixed ? Promise.resolve(4020 + i) : freePort())));
    const balancer = new RoundRobinBalancer(bridgePorts.map((p) => `http://127.0.0.1:${p}`));
    await balancer.listen(fixed ? 4029 : 0);
    started.push(() => balancer.close());
    const sandbox = await launchSandbox(join(work, 'sandbox'), {
      SANDBOX_PORT: fixed ? '4010' : '0',
      SANDBOX_WEBHOOK_URLS: `${balancer.url}/webhooks/esign`,
      ...(options.sandboxFaults ? { SANDBOX_FAULTS: JSON.stringify(options.sandboxFaults) } : {}),
    });
    started.push(() => sandbox.stop());
    log(`sandbox      ${sandbox.url} (webhooks to ${balancer.url}, round-robin over ${bridgeCount} bridges)`);
    await writeFile(join(documentsDir, 'agreement.pdf'), await samplePdf('Agreement'));

    const common = {
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: namespace,
      ESIGN_TASK_QUEUE: taskQueue,
      ESIGN_CODEC_KEYS: codecKeys,
      ESIGN_METRICS_ADDRESS: '',
    };
    const bridges = bridgePorts.map(
      (port, i) =>
        new Service(
          `bridge-${i + 1}`,
          'src/bridge/main.ts',
          { ...common, BRIDGE_PORT: String(port), ...sandboxBridgeEnv(sandbox), LOG_LEVEL: 'info' },
          /listening/,
          join(logsDir, `bridge-${i + 1}.log`),
        ),
    );
    const bundle = await prebuiltBundle(work);
    const workers = Array.from(
      { length: options.workers ?? 2 },
      (_, i) =>
        new Service(
          `worker-${i + 1}`,
          'src/worker/main.ts',
          {
            ...common,
            ESIGN_WORKFLOW_BUNDLE: bundle,
            ...sandboxWorkerEnv(sandbox, { archive: archiveDir, documents: documentsDir }),
            // One Worker Deployment; its version (named after the bundle) becomes current as the workers start.
            ESIGN_WORKER_DEPLOYMENT: 'esign',
            ESIGN_WORKER_SET_CURRENT: 'true',
            ESIGN_MIN_RECONCILE_INTERVAL: '1 second',
            ESIGN_SHUTDOWN_GRACE: '2 seconds',
            LOG_LEVEL: 'info',
            ...options.workerEnv,
          },
          /worker polling/,
          join(logsDir, `worker-${i + 1}.log`),
        ),
    );
    started.push(() => Promise.all([...workers, ...bridges].map((s) => s.close())));
    await Promise.all([...bridges, ...workers].map((s) => s.start()));
    log(`bridges      ${bridgePorts.map((p) => `127.0.0.1:${p}`).join(', ')}`);
    log(`workers      ${workers.length} on task queue ${taskQueue}, archive ${archiveDir}`);
    return {
      pg,
      temporal,
      address: temporal.address,
      namespace,
      taskQueue,
      codecKeys,
      codecKeysFile: keysFile,
      sandbox,
      workers,
      bridges,
      balancer,
      archiveDir,
      documentsDir,
      logsDir,
      async stop() {
        await Promise.all([...workers, ...bridges].map((s) => s.close()));
        await sandbox.stop();
        await balancer.close();
        await temporal.stop();
        await pg.stop();
      },
    };
  } catch (err) {
    for (const stop of started.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}
