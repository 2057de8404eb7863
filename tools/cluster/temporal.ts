import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { launchCommand, projectRoot, type Launched } from '../support/launch.js';
import { freePort, freePortInRange } from '../support/net.js';
import { portOpen, type PostgresServer } from './postgres.js';

const run = promisify(execFile);

export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/** Each service's gRPC, membership and Prometheus ports (and the frontend's HTTP port). */
export type ClusterPorts = Record<TemporalService, { grpc: number; membership: number; metrics: number }> & { frontendHttp: number };

/** The defaults of deploy/temporal/config.yaml, for `npm run cluster` on its own host. */
export const DEFAULT_PORTS: ClusterPorts = {
  frontend: { grpc: 7233, membership: 6933, metrics: 9090 },
  history: { grpc: 7234, membership: 6934, metrics: 9091 },
  matching: { grpc: 7235, membership: 6935, metrics: 9092 },
  worker: { grpc: 7239, membership: 6939, metrics: 9093 },
  frontendHttp: 7243,
};

/**
 * Free ports for every service, so several clusters (tests, chaos, benchmarks)
 * can run on one machine. Membership ports are stored as a SQL smallint: they
 * are picked below 32768.
 */
export async function freeClusterPorts(): Promise<ClusterPorts> {
  const three = async () => ({ grpc: await freePort(), membership: await freePortInRange(20_000, 32_000), metrics: await freePort() });
  return {
    frontend: await three(),
    history: await three(),
    matching: await three(),
    worker: await three(),
    frontendHttp: await freePort(),
  };
}

export const CONFIG_FILE = join(projectRoot, 'deploy/temporal/config.yaml');
export const DYNAMIC_CONFIG_FILE = join(projectRoot, 'deploy/temporal/dynamicconfig.yaml');
export const SETUP_NAMESPACE_SCRIPT = join(projectRoot, 'deploy/temporal/setup-namespace.sh');

/**
 * Creates or upgrades the persistence and visibility schemas with the
 * server's own schema tool (what temporalio/admin-tools does under compose).
 * Idempotent: an existing database is upgraded to the tool's version.
 */
export async function setupSchemas(serverDir: string, pg: PostgresServer): Promise<void> {
  const env = {
    ...process.env,
    SQL_PASSWORD: pg.password,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: '127.0.0.1',
    SQL_PORT: String(pg.port),
    SQL_USER: pg.user,
  };
  const tool = join(serverDir, 'temporal-sql-tool');
  for (const [db, schema] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    const sql = (...args: string[]) => run(tool, ['--db', db, ...args], { env });
    try {
      await sql('create-database');
    } catch (err) {
      if (!/already exists/.test(String((err as { stderr?: string }).stderr ?? err))) throw err;
    }
    // Version 0.0 creates only the version bookkeeping; the update applies every versioned step not yet applied.
    try {
      await sql('setup-schema', '-v', '0.0');
    } catch (err) {
      if (!/already exists/.test(String((err as { stderr?: string }).stderr ?? err))) throw err;
    }
    await sql('update-schema', '-d', join(serverDir, 'schema/postgresql/v12', schema, 'versioned'));
  }
}

export interface TemporalClusterOptions {
  serverDir: string;
  pg: PostgresServer;
  ports?: ClusterPorts;
  /** Where each service's output goes (`<service>.log` inside it). */
  logs?: (service: TemporalService) => NodeJS.WritableStream | undefined;
}

/**
 * The Temporal server as four processes (history, matching, frontend and the
 * internal worker), from deploy/temporal/config.yaml. Each can be killed and
 * restarted on its own, as a pod in a real cluster.
 */
export class TemporalCluster {
  readonly ports: ClusterPorts;
  readonly #options: TemporalClusterOptions;
  readonly #running = new Map<TemporalService, Launched>();

  constructor(options: TemporalClusterOptions) {
    this.#options = options;
    this.ports = options.ports ?? DEFAULT_PORTS;
  }

  get address(): string {
    return `127.0.0.1:${this.ports.frontend.grpc}`;
  }

  async start(): Promise<void> {
    for (const service of TEMPORAL_SERVICES) await this.startService(service);
  }

  async startService(service: TemporalService): Promise<void> {
    const grpcPort = this.ports[service].grpc;
    const log = this.#options.logs?.(service);
    const launched = await launchCommand(
      join(this.#options.serverDir, 'temporal-server'),
      ['--config-file', CONFIG_FILE, 'start', '--service', service],
      {
        label: `temporal-${service}`,
        cwd: projectRoot,
        env: this.#env(service),
        // The server logs at warn: it is ready when its gRPC port answers.
        ready: () => portOpen(grpcPort),
        timeoutMs: 90_000,
        ...(log ? { log: log as never } : {}),
      },
    );
    this.#running.set(service, launched);
  }

  /** The process id of a running service (for CPU accounting). */
  pid(service: TemporalService): number | undefined {
    return this.#running.get(service)?.child.pid;
  }

  /** SIGKILL one service, as a crashed pod. */
  async kill(service: TemporalService): Promise<void> {
    await this.#running.get(service)?.kill();
    this.#running.delete(service);
  }

  async restart(service: TemporalService): Promise<void> {
    await this.kill(service);
    await this.startService(service);
  }

  async stop(): Promise<void> {
    // The reverse of the start order: the frontend stops taking calls first.
    for (const service of [...TEMPORAL_SERVICES].reverse()) {
      await this.#running.get(service)?.stop(15_000);
      this.#running.delete(service);
    }
  }

  #env(service: TemporalService): Record<string, string> {
    const p = this.ports;
    const pg = this.#options.pg;
    return {
      TEMPORAL_DYNAMIC_CONFIG: DYNAMIC_CONFIG_FILE,
      POSTGRES_HOST: '127.0.0.1',
      POSTGRES_PORT: String(pg.port),
      POSTGRES_USER: pg.user,
      POSTGRES_PASSWORD: pg.password,
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      TEMPORAL_FRONTEND_ADDRESS: this.address,
      FRONTEND_GRPC_PORT: String(p.frontend.grpc),
      FRONTEND_MEMBERSHIP_PORT: String(p.frontend.membership),
      FRONTEND_HTTP_PORT: String(p.frontendHttp),
      HISTORY_GRPC_PORT: String(p.history.grpc),
      HISTORY_MEMBERSHIP_PORT: String(p.history.membership),
      MATCHING_GRPC_PORT: String(p.matching.grpc),
      MATCHING_MEMBERSHIP_PORT: String(p.matching.membership),
      WORKER_GRPC_PORT: String(p.worker.grpc),
      WORKER_MEMBERSHIP_PORT: String(p.worker.membership),
      TEMPORAL_METRICS_PORT: String(p[service].metrics),
    };
  }
}

/** Creates the namespace and search attributes with deploy/temporal/setup-namespace.sh, as compose's admin-tools does. */
export async function setupNamespace(cliPath: string, address: string, namespace = 'default'): Promise<void> {
  // The frontend may answer before it has loaded namespaces: retry for a while.
  let lastError: unknown;
  for (let i = 0; i < 60; i++) {
    try {
      await run('sh', [SETUP_NAMESPACE_SCRIPT], {
        env: { ...process.env, TEMPORAL_CLI: cliPath, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace },
      });
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  throw new Error(`could not set up namespace ${namespace}: ${String((lastError as { stderr?: string }).stderr ?? lastError)}`);
}
