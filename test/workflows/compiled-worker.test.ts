// Production runs the JavaScript `npm run build` compiles, with plain node and the production dependencies alone
// (docs/decisions/compiled-javascript-in-production.md): the image's command and `npm run worker` run no TypeScript.
// Here the same compiler and configuration write into a directory laid out as the image's /app (package.json,
// node_modules with only what `npm ci --omit=dev` installs, dist/, bin/esign.js), and the compiled worker, bridge,
// codec endpoint and CLI, started with plain node, take a transaction from its start to its verified archive.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { AesGcmCodec, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { WORKER_NODE_FLAGS } from '../../src/worker/node-flags.js';
import { launchCommand, type Launched } from '../../tools/support/launch.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { connectToTestServer, freePort, type TemporalTestContext, uniqueTaskQueue } from '../support/temporal.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const codecKeys = `k:${randomBytes(32).toString('base64')}`;
const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
const children: Launched[] = [];
let app: string;
let temporal: TemporalTestContext;
let sandbox: TestSandbox;

/** The top-level packages `npm ci --omit=dev` installs: package-lock.json's entries not marked dev. */
async function productionPackages(): Promise<string[]> {
  const lock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => /^node_modules\/(?:@[^/]+\/)?[^/@][^/]*$/.test(path) && !entry.dev)
    .map(([path]) => path.slice('node_modules/'.length))
    .filter((name) => existsSync(join(root, 'node_modules', name)));
}

/**
 * The image's /app: the compiled code (the build's compiler and tsconfig.build.json, into another outDir), the
 * manifest (the code is ESM by its "type"; the worker reads its version), the CLI's launcher and node_modules holding
 * links to the production packages only, so that no development dependency (tsx, typescript) resolves from it.
 */
async function layOutApp(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-compiled-'));
  // Type-checked already (`npm run typecheck`, the same options over more files); with isolatedModules the emitted
  // JavaScript does not depend on the types, so --noCheck writes the same files as `npm run build`, in about half its time.
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', join(dir, 'dist'), '--noCheck'], {
    cwd: root,
  });
  for (const file of ['package.json', 'bin/esign.js', 'scripts/preflight.cjs']) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await cp(join(root, file), join(dir, file));
  }
  for (const name of await productionPackages()) {
    await mkdir(dirname(join(dir, 'node_modules', name)), { recursive: true });
    await symlink(join(root, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
  }
  return dir;
}

/** This process's environment and `env`, with no NODE_OPTIONS: nothing inherited may load a TypeScript loader. */
function plainEnv(env: Record<string, string>): Record<string, string> {
  return { ...(process.env as Record<string, string>), NODE_OPTIONS: '', ...env };
}

/** A compiled entry point in its own plain Node process, from the app's directory; ready once `ready` is printed. */
async function start(entry: string, env: Record<string, string>, ready: RegExp, nodeFlags: readonly string[] = []): Promise<Launched> {
  const launched = await launchCommand(process.execPath, [...nodeFlags, join(app, entry)], {
    cwd: app,
    env: plainEnv(env),
    ready,
    label: entry,
  });
  children.push(launched);
  return launched;
}

beforeAll(async () => {
  [app, temporal, sandbox] = await Promise.all([layOutApp(), connectToTestServer(), startTestSandbox({ webhookSecret })]);
}, 180_000);
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  await sandbox?.close();
  await temporal?.close();
  if (app) await rm(app, { recursive: true, force: true });
});

it('lays out the app with the production dependencies only: neither tsx nor typescript resolves from the compiled code', () => {
  const fromCompiled = createRequire(join(app, 'dist/src/worker/main.js'));
  expect(fromCompiled.resolve('@temporalio/worker')).toBeTruthy();
  for (const name of ['tsx', 'typescript', 'vitest']) expect(() => fromCompiled.resolve(name), name).toThrow(/Cannot find module/);
  for (const entry of ['src/worker/main.js', 'src/bridge/main.js', 'src/codec/main.js', 'src/cli/main.js', 'scripts/bundle-workflows.js'])
    expect(existsSync(join(app, 'dist', entry)), entry).toBe(true);
});

it('runs a transaction through the compiled worker and bridge, started with plain node, and the compiled codec endpoint and CLI', async () => {
  const [pdf] = await samplePdfFiles(['Compiled']);
  const taskQueue = uniqueTaskQueue('compiled');
  const [bridgePort, codecPort] = [await freePort(), await freePort()];
  const common = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    ESIGN_TASK_QUEUE: taskQueue,
    ESIGN_CODEC_KEYS: codecKeys,
    ESIGN_METRICS_ADDRESS: '',
    ESIGN_PROVIDER_URL: sandbox.running.url,
    ESIGN_PROVIDER_TOKEN: sandbox.token,
  };
  const bridge = `http://127.0.0.1:${bridgePort}`;
  await start('dist/src/bridge/main.js', { ...common, BRIDGE_PORT: String(bridgePort), ESIGN_WEBHOOK_SECRETS: webhookSecret }, /listening/);
  expect((await fetch(`${bridge}/healthz`)).status).toBe(200);
  sandbox.running.webhookUrls.push(`${bridge}/webhooks/esign`);

  const trustAnchors = join(dirname(pdf!), 'sandbox-ca.pem');
  await writeFile(trustAnchors, sandbox.running.caCertificate);
  // A versioned worker, as the dev stack and the cluster run it: its build id names the package's version, which the
  // compiled code reads from the package.json above dist/. The workflow bundle is the suite's (ESIGN_WORKFLOW_BUNDLE).
  const deployment = `esign-${taskQueue}`;
  await start(
    'dist/src/worker/main.js',
    {
      ...common,
      ESIGN_DOCUMENT_ROOTS: dirname(pdf!),
      ESIGN_ARCHIVE_DIR: join(dirname(pdf!), 'archive'),
      ESIGN_TRUST_ANCHORS: trustAnchors,
      ESIGN_SEAL_PINS: sandbox.running.sealPins.join(','),
      ESIGN_WORKER_DEPLOYMENT: deployment,
      ESIGN_WORKER_SET_CURRENT: 'true',
    },
    /worker polling/,
    WORKER_NODE_FLAGS,
  );

  const codec = `http://127.0.0.1:${codecPort}`;
  await start('dist/src/codec/main.js', { ESIGN_CODEC_KEYS: codecKeys, ESIGN_CODEC_PORT: String(codecPort) }, /codec endpoint on/);
  expect((await fetch(`${codec}/healthz`)).status).toBe(200);

  const client = new Client({
    connection: temporal.client.connection,
    dataConverter: { payloadCodecs: [new AesGcmCodec(parseCodecKeys(codecKeys))] },
  });
  const referenceId = `compiled-${Date.now()}`;
  const { handle } = await startEsignTransaction(
    client,
    {
      referenceId,
      documents: [
        {
          title: 'Compiled',
          source: { path: pdf! },
          tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
        },
      ],
      participants: [
        { email: 'cora@example.com', firstName: 'Cora', lastName: 'Compiled', authenticationType: 'none', twoFactorContact: 'email' },
      ],
      notifyParticipants: { email: false },
      reconcileInterval: '1 day',
    },
    { taskQueue },
  );
  let status = await handle.query(statusQuery);
  await expect
    .poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 60_000, interval: 250 })
    .toBe('awaiting_signatures');
  // The provider's webhook reaches the workflow through the compiled bridge (reconciliation waits a day).
  await sandbox.control.signAs(status.transactionId!, status.participants[0]!.id);
  expect((await handle.result()).status).toBe('completed');

  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
  const bundle = await readFile(process.env.ESIGN_WORKFLOW_BUNDLE!, 'utf8');
  const buildId = `${version}+${createHash('sha256').update(bundle).digest('hex').slice(0, 12)}`;
  expect((await handle.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId).toBe(buildId);

  // The CLI from the app's bin/esign.js: no source beside it and no tsx, so it runs dist/src/cli/main.js.
  const cli = await promisify(execFile)(process.execPath, [join(app, 'bin/esign.js'), 'status', referenceId], {
    cwd: app,
    env: plainEnv(common),
  });
  expect(cli.stdout).toMatch(/completed/);
}, 180_000);
