// The Temporal side of a chaos run: the dev server (stopped and restarted
// whole) or the production topology (each service and PostgreSQL broken on
// its own), behind one interface the schedule drives.
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { startDevServer } from '../tools/temporal/dev-server.js';
import { freePort } from '../tools/support/net.js';
import { PostgresServer } from '../tools/cluster/postgres.js';
import { freeClusterPorts, setupNamespace, setupSchemas, TemporalCluster } from '../tools/cluster/temporal.js';
import { ensureTemporalServer } from '../tools/cluster/topology.js';
import type { ChaosAction } from './schedule.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The Temporal side of a chaos run, and how the schedule breaks it. */
export interface ChaosTemporal {
  address: string;
  perform(action: Exclude<ChaosAction, { kind: 'kill-worker' | 'restart-bridge' | 'rolling-deploy' | 'bulk-send' }>): Promise<void>;
  stop(): Promise<void>;
}

/** The dev server with a persisted database: the schedule stops and restarts it whole. */
export async function devServerTemporal(work: string, cli: string): Promise<ChaosTemporal> {
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
export async function clusterTemporal(work: string, cli: string, logs: string): Promise<ChaosTemporal> {
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
