// `npm run cluster`: the production topology, natively on this machine
// (docs/cluster.md): PostgreSQL, the Temporal server's four services, two
// workers, two bridges behind a balancer, and the sandbox. Data in
// ESIGN_CLUSTER_DIR (default .data/cluster), kept across runs. Ctrl-C stops it.
import { resolve } from 'node:path';
import { startTopology } from './topology.js';

const workDir = resolve(process.env.ESIGN_CLUSTER_DIR ?? '.data/cluster');
const say = (line: string) => process.stdout.write(`[cluster] ${line}\n`);
say(`starting in ${workDir} (the first run builds the Temporal server: a few minutes)`);
const topology = await startTopology({ workDir, fixedPorts: true, log: say }).catch((err: unknown) => {
  say(`failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
say('');
say('Everything is up:');
say(`  Temporal frontend  ${topology.address} (namespace ${topology.namespace})`);
say(`  Sandbox API        ${topology.sandbox.url}`);
say(`  Webhooks           ${topology.balancer.url}/webhooks/esign -> ${topology.bridges.length} bridges`);
say(`  Workers            ${topology.workers.length} on ${topology.taskQueue}; archive ${topology.archiveDir}`);
say(`  Logs               ${topology.logsDir}`);
say(`  Codec keys         ${topology.codecKeysFile}`);
say(
  `Try: TEMPORAL_ADDRESS=${topology.address} ESIGN_CODEC_KEYS_FILE=${topology.codecKeysFile} ESIGN_PROVIDER_URL=${topology.sandbox.url} npx esign demo --auto-sign`,
);
say('Ctrl-C stops everything.');

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  say('stopping…');
  await topology.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
