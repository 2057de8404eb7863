// `npm run dev`: the whole system on one machine, in one foreground process.
// The Temporal dev server (with Web UI and search attributes), the provider
// sandbox, the webhook bridge it delivers to, and the transaction worker.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { z } from 'zod';
import { BridgeEnv } from '../../src/bridge/config.js';
import { bridgeConfigFromEnv, startBridge, type RunningBridge } from '../../src/bridge/index.js';
import { aesGcmCodecOf, newCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { CodecEnv } from '../../src/codec/config.js';
import { devCodecKeysFile } from '../../src/codec/data-converter.js';
import { devKeyStoreFile, loadKeyStore, orchestratorDataConverter } from '../../src/codec/key-store-config.js';
import { buildCodecServer } from '../../src/codec/server.js';
import { parseEnv } from '../../src/util/env.js';
import { sandboxConfigFromEnv, startSandbox, type RunningSandbox } from '../../packages/sandbox/src/index.js';
import { installObservability } from '../../src/observability/runtime.js';
import { ensureTemporalBinaries } from '../temporal/binaries.js';
import { PRIORITY_AND_FAIRNESS } from '../temporal/dev-server.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { startWorker, type StartedWorker } from '../../src/worker/start.js';
import { samplePdf as samplePdfBytes } from '../../src/cli/sample-pdf.js';
import { startHostPage, type RunningHostPage } from './host-page.js';
import { cliTypeOf, esignSearchAttributes } from '../../src/definitions/search-attributes.js';

const DevEnv = z.object({
  ESIGN_DATA_DIR: z.string().default('.data'),
  TEMPORAL_DEV_HOST: z.string().default('127.0.0.1'),
  TEMPORAL_DEV_PORT: z.coerce.number().int().min(1).max(65535).default(7233),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** The example integrator's page and backend (tools/dev/host-page.ts). */
  ESIGN_HOST_PAGE_PORT: z.coerce.number().int().min(1).max(65535).default(4040),
});

const colours = { temporal: 36, sandbox: 35, bridge: 34, worker: 32, host: 31, dev: 33 } as const;
function say(who: keyof typeof colours, line: string): void {
  const prefix = process.stdout.isTTY ? `\x1b[${colours[who]}m${who.padEnd(8)}\x1b[0m` : who.padEnd(8);
  process.stdout.write(`${prefix} | ${line}\n`);
}

async function assertPortFree(host: string, port: number, setting: string): Promise<void> {
  await new Promise<void>((ok, fail) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        new Error(err.code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use: set ${setting} to another port` : err.message),
      ),
    );
    probe.listen(port, host, () => probe.close(() => ok()));
  });
}

function pipePrefixed(child: ChildProcess, who: keyof typeof colours): void {
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) say(who, line);
    });
  }
}

async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((done) => {
      const socket = connect(port, host, () => {
        socket.end();
        done(true);
      });
      socket.once('error', () => done(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Temporal did not open ${host}:${port} within ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const env = parseEnv(DevEnv, process.env, 'dev stack');
  const dataDir = resolve(env.ESIGN_DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  const sandboxEnv = { SANDBOX_DATA_DIR: join(dataDir, 'sandbox'), ...process.env };
  const sandboxConfig = sandboxConfigFromEnv(sandboxEnv);

  await assertPortFree(env.TEMPORAL_DEV_HOST, env.TEMPORAL_DEV_PORT, 'TEMPORAL_DEV_PORT');
  await assertPortFree(env.TEMPORAL_DEV_HOST, env.TEMPORAL_UI_PORT, 'TEMPORAL_UI_PORT');
  const codecEnv = parseEnv(CodecEnv, process.env, 'codec endpoint');
  await assertPortFree(codecEnv.ESIGN_CODEC_HOST, codecEnv.ESIGN_CODEC_PORT, 'ESIGN_CODEC_PORT');

  // Payloads are encrypted in the dev stack too: keys generated once, kept in the data dir.
  if (!process.env.ESIGN_CODEC_KEYS && !process.env.ESIGN_CODEC_KEYS_FILE) {
    const keysFile = devCodecKeysFile({ ...process.env, ESIGN_DATA_DIR: dataDir });
    if (!existsSync(keysFile)) writeFileSync(keysFile, `${newCodecKeys('dev-1')}\n`, { mode: 0o600 });
    process.env.ESIGN_CODEC_KEYS_FILE = keysFile;
  }
  // And each workflow's payloads under a data key of its own, which `esign erase` destroys (docs/codec.md).
  if (!process.env.ESIGN_KEY_STORE) {
    const keyStore = devKeyStoreFile({ ...process.env, ESIGN_DATA_DIR: dataDir });
    process.env.ESIGN_KEY_STORE = `sqlite:${keyStore}`;
    if (!existsSync(keyStore)) await (await loadKeyStore({ kind: 'sqlite', path: keyStore })).init();
  }
  const codec = aesGcmCodecOf(orchestratorDataConverter(process.env)!.payloadCodecs)!;
  // Events to the example integrator are signed with its own secret, generated once like the codec keys.
  const callbackSecretFile = join(dataDir, 'callback.secret');
  if (!process.env.ESIGN_CALLBACK_SECRETS) {
    if (!existsSync(callbackSecretFile))
      writeFileSync(callbackSecretFile, `whsec_${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    process.env.ESIGN_CALLBACK_SECRETS = readFileSync(callbackSecretFile, 'utf8').trim();
  }
  const hostOrigin = `http://${env.TEMPORAL_DEV_HOST}:${env.ESIGN_HOST_PAGE_PORT}`;
  await assertPortFree(env.TEMPORAL_DEV_HOST, env.ESIGN_HOST_PAGE_PORT, 'ESIGN_HOST_PAGE_PORT');
  const uiOrigins = [`http://localhost:${env.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${env.TEMPORAL_UI_PORT}`];
  const codecServer = await buildCodecServer({
    codec,
    corsOrigins: uiOrigins,
    ...(codecEnv.ESIGN_CODEC_AUTH_TOKEN ? { authToken: codecEnv.ESIGN_CODEC_AUTH_TOKEN } : {}),
  });
  const codecUrl = await codecServer.listen({ host: codecEnv.ESIGN_CODEC_HOST, port: codecEnv.ESIGN_CODEC_PORT });
  await assertPortFree(sandboxConfig.host, sandboxConfig.port, 'SANDBOX_PORT');
  const bridgeAddress = BridgeEnv.pick({ BRIDGE_HOST: true, BRIDGE_PORT: true }).parse(process.env);
  await assertPortFree(bridgeAddress.BRIDGE_HOST, bridgeAddress.BRIDGE_PORT, 'BRIDGE_PORT');

  // Worker logs (JSON) at warn and above keep the dev output readable; LOG_LEVEL=info shows all.
  const { metricsAddress } = installObservability('dev', { LOG_LEVEL: 'warn', ...process.env });
  const { cli } = await ensureTemporalBinaries('cli');
  if (!cli) throw new Error('no Temporal CLI available (see scripts/ensure-temporal.sh)');

  const children: ChildProcess[] = [];
  const started: { sandbox?: RunningSandbox; worker?: StartedWorker; bridge?: RunningBridge; host?: RunningHostPage } = {};
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('dev', 'stopping…');
    await started.host?.close().catch(() => undefined);
    await started.bridge?.stop().catch(() => undefined);
    await codecServer.close().catch(() => undefined);
    await started.worker?.close().catch(() => undefined);
    await started.sandbox?.stop().catch(() => undefined);
    const running = children.filter((c) => c.exitCode === null);
    for (const child of running) child.kill('SIGTERM');
    await Promise.all(running.map((c) => new Promise((r) => c.once('exit', r))));
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));

  const temporal = spawn(
    cli,
    [
      'server',
      'start-dev',
      '--ip',
      env.TEMPORAL_DEV_HOST,
      '--port',
      String(env.TEMPORAL_DEV_PORT),
      '--ui-port',
      String(env.TEMPORAL_UI_PORT),
      '--db-filename',
      join(dataDir, 'temporal.sqlite'),
      '--log-level',
      'warn',
      '--ui-codec-endpoint',
      codecUrl,
      ...esignSearchAttributes.flatMap((sa) => ['--search-attribute', `${sa.name}=${cliTypeOf(sa)}`]),
      ...PRIORITY_AND_FAIRNESS,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(temporal);
  pipePrefixed(temporal, 'temporal');
  temporal.once('exit', (code) => {
    if (!stopping) {
      say('dev', `Temporal dev server exited (${code}); stopping`);
      void stop(1);
    }
  });
  await waitForPort(env.TEMPORAL_DEV_HOST, env.TEMPORAL_DEV_PORT, 60_000);

  // The sandbox sends its webhooks to the bridge, signed with the secret it keeps in the data dir.
  const bridgeUrl = `http://${bridgeAddress.BRIDGE_HOST}:${bridgeAddress.BRIDGE_PORT}/webhooks/esign`;
  const sandbox = await startSandbox({
    ...sandboxConfig,
    webhookUrls: [...new Set([...sandboxConfig.webhookUrls, bridgeUrl])],
    // The example integrator may frame the signing page (localhost and 127.0.0.1 are different origins).
    embedOrigins: [...new Set([...sandboxConfig.embedOrigins, hostOrigin, hostOrigin.replace('127.0.0.1', 'localhost')])],
  });
  started.sandbox = sandbox;
  say('sandbox', `listening on ${sandbox.url}, webhooks to ${bridgeUrl}`);

  process.env.TEMPORAL_ADDRESS ??= `${env.TEMPORAL_DEV_HOST}:${env.TEMPORAL_DEV_PORT}`;
  const bridge = await startBridge(
    bridgeConfigFromEnv(
      { BRIDGE_LOG: 'false', ...process.env, ESIGN_PROVIDER_URL: process.env.ESIGN_PROVIDER_URL ?? sandbox.url },
      { kind: 'standard-webhooks', secrets: [sandbox.webhookSecret], toleranceSeconds: 300 },
      () => sandbox.issueToken(),
    ),
  );
  started.bridge = bridge;
  say('bridge', `listening on ${bridge.url}/webhooks/esign`);

  // With the embedded sandbox as provider, its CA is the trust anchor, its sealing keys are pinned and its certificate
  // of completion is required.
  const sandboxCaFile = join(dataDir, 'sandbox-ca.pem');
  writeFileSync(sandboxCaFile, sandbox.caCertificate);
  const evidenceDefaults = process.env.ESIGN_PROVIDER_URL
    ? {}
    : {
        ESIGN_TRUST_ANCHORS: sandboxCaFile,
        ESIGN_SEAL_PINS: sandbox.sealPins.join(','),
        ESIGN_REQUIRE_COMPLETION_CERTIFICATE: 'true',
        // The evidence upkeep renews with the sandbox's own TSA and revocation service (docs/evidence.md, "Upkeep").
        ESIGN_EVIDENCE_TSA_URL: `${sandbox.url}/sandbox/tsa`,
        ESIGN_EVIDENCE_OCSP_URL: `${sandbox.url}/sandbox/ocsp`,
        ESIGN_EVIDENCE_CRL_URL: `${sandbox.url}/sandbox/ca.crl`,
      };
  const workerConfig = workerConfigFromEnv(
    {
      // One versioned worker, made current as it starts. Its build id stays `dev` whatever the code: the dev
      // server's data outlives a restart, and a run pinned to a build no worker runs any more would wait forever.
      // (Set ESIGN_WORKER_BUILD_ID to try a rolling upgrade by hand: docs/operations.md.)
      ESIGN_WORKER_DEPLOYMENT: 'esign',
      ESIGN_WORKER_BUILD_ID: 'dev',
      ESIGN_WORKER_SET_CURRENT: 'true',
      ESIGN_ARCHIVE_DIR: join(dataDir, 'archive'),
      ESIGN_DOCUMENT_ROOTS: join(dataDir, 'documents'),
      // Where `npx esign template create` puts templates when ESIGN_TEMPLATE_STORE is unset (docs/templates.md).
      ESIGN_TEMPLATE_STORE: join(dataDir, 'templates'),
      ...evidenceDefaults,
      ...process.env,
      ESIGN_ALLOWED_URLS: [process.env.ESIGN_ALLOWED_URLS, hostOrigin].filter(Boolean).join(','),
      ESIGN_PROVIDER_URL: process.env.ESIGN_PROVIDER_URL ?? sandbox.url,
    },
    // The embedded sandbox mints a fresh token per request; a real provider's comes from ESIGN_PROVIDER_TOKEN.
    () => sandbox.issueToken(),
  );
  mkdirSync(workerConfig.documentRoots[0] ?? join(dataDir, 'documents'), { recursive: true });
  const worker = await startWorker(workerConfig);
  started.worker = worker;
  const version = worker.deployment ? `, version ${worker.deployment.name}/${worker.deployment.buildId} (current)` : '';
  say('worker', `polling task queue "${workerConfig.taskQueue}"${version}, archiving to ${workerConfig.archiveDir}`);
  worker.done.then(
    () => void stop(stopping ? 0 : 1),
    (err: unknown) => {
      say('worker', `stopped: ${err instanceof Error ? err.message : String(err)}`);
      void stop(1);
    },
  );

  const samplePdf = join(workerConfig.documentRoots[0] ?? join(dataDir, 'documents'), 'host-sample.pdf');
  if (!existsSync(samplePdf)) writeFileSync(samplePdf, await samplePdfBytes('Sample agreement'));
  const hostClient = new Client({
    connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }),
    dataConverter: orchestratorDataConverter()!,
  });
  const host = await startHostPage(
    {
      client: hostClient,
      taskQueue: workerConfig.taskQueue,
      callbackSecret: process.env.ESIGN_CALLBACK_SECRETS.split(',')[0]!.trim(),
      signingOrigin: new URL(sandbox.url).origin,
      samplePdfPath: samplePdf,
    },
    { host: env.TEMPORAL_DEV_HOST, port: env.ESIGN_HOST_PAGE_PORT },
  );
  started.host = host;
  say('host', `example integrator on ${host.url} (embeds the signing page, receives signed callbacks)`);

  say('dev', '');
  say('dev', 'Everything is up:');
  say('dev', `  Temporal gRPC   ${env.TEMPORAL_DEV_HOST}:${env.TEMPORAL_DEV_PORT}`);
  say('dev', `  Temporal Web UI http://${env.TEMPORAL_DEV_HOST}:${env.TEMPORAL_UI_PORT}`);
  say(
    'dev',
    `  Sandbox API     ${sandbox.url}   (a dev token: curl -X POST -H 'content-type: application/json' -d '{}' ${sandbox.url}/_sandbox/tokens)`,
  );
  say('dev', `  Webhook bridge  ${bridge.url}/webhooks/esign   (readiness and metrics: ${bridge.internalUrl}/readyz, /metrics)`);
  say('dev', `  Codec endpoint  ${codecUrl}   (payloads are encrypted; the Web UI decodes through it)`);
  say('dev', `  Worker          task queue ${workerConfig.taskQueue}, archive ${workerConfig.archiveDir}`);
  say('dev', `  Templates       ${workerConfig.templateStore?.location ?? 'none'}   (npx esign template --help; docs/templates.md)`);
  say('dev', `  Worker metrics  ${metricsAddress ? `http://${metricsAddress}/metrics` : 'off'}`);
  say('dev', `  Sandbox outbox  ${sandbox.url}/_sandbox/outbox.html   (invitations and one-time codes)`);
  say(
    'dev',
    `  Seals           ${workerConfig.evidence.signatures}, trust anchor ${workerConfig.evidence.trust.seal.anchors.length > 0 ? (process.env.ESIGN_TRUST_ANCHORS ?? sandboxCaFile) : 'none'}, ${workerConfig.evidence.trust.seal.pins.length} sealing key(s) pinned (docs/evidence.md)`,
  );
  say('dev', `  Integrator page ${host.url}   (start a sample transaction, sign it embedded, watch its events)`);
  say('dev', `  Data dir        ${dataDir}`);
  say('dev', 'Secrets (files; their contents are never printed):');
  say(
    'dev',
    `  Codec keys      ${process.env.ESIGN_CODEC_KEYS_FILE ?? '(ESIGN_CODEC_KEYS)'}   used by: worker, bridge, npx esign, the codec endpoint`,
  );
  say(
    'dev',
    `  Callback secret ${process.env.ESIGN_CALLBACK_SECRETS && existsSync(callbackSecretFile) ? callbackSecretFile : '(ESIGN_CALLBACK_SECRETS)'}   verifies the events sent to callbackUrl`,
  );
  say('dev', `  Webhook secret  ${join(sandboxConfig.dataDir, 'sandbox.sqlite')} (meta table)   shared by the sandbox and the bridge`);
  say('dev', 'Next, in another terminal: npm run demo   (or: npm run demo -- --auto-sign; npx esign --help)');
  say('dev', 'Ctrl-C stops everything.');
}

main().catch((err: unknown) => {
  say('dev', `failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
