import { HttpTimestampAuthority } from '@libpdf/core';
import { DEFAULT_CALLBACK_DELIVERY } from '../../activities/completion.js';
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, type Worker } from '@temporalio/worker';
import { LocalArchiveStore, type ArchiveStore } from '../archive/store.js';
import { S3ArchiveStore, s3Client } from '../archive/s3-store.js';
import { aesGcmCodecOf } from '../codec/aes-gcm-codec.js';
import { workerPlaintextPolicy } from '../codec/data-converter.js';
import { orchestratorDataConverter } from '../codec/key-store-config.js';
import { ensureEvidenceUpkeepSchedule } from '../client/evidence-upkeep.js';
import { ensureRecordsRetentionSchedule, listLegalHolds } from '../client/records.js';
import { EsignClient } from '../esign/client.js';
import { HttpRevocationProvider } from '../evidence/revocation-client.js';
import { boundedFetch, installOutboundGuard, OutboundPolicy, permitOutbound } from '../http/outbound.js';
import { tracingPluginFromEnv } from '../observability/tracing.js';
import { templateStoreAt } from '../templates/env.js';
import { objectStoreAt } from '../storage/s3-object-store.js';
import type { WorkerConfig } from './config.js';
import { bundleWorkflows, createEsignWorker } from './create-worker.js';

export interface StartedWorker {
  worker: Worker;
  /** The Worker Deployment version it runs as; absent when unversioned. */
  deployment: { name: string; buildId: string } | undefined;
  /** Resolves when the worker has stopped (after shutdown() or a fatal error). */
  done: Promise<void>;
  close(): Promise<void>;
}

/** The archive store the configuration names: S3-compatible storage when a bucket is set, else the local directory. */
function archiveStore(config: WorkerConfig): ArchiveStore {
  if (!config.s3) return new LocalArchiveStore(config.archiveDir);
  const client = s3Client({ region: config.s3.region, endpoint: config.s3.endpoint });
  return new S3ArchiveStore({
    client,
    bucket: config.s3.bucket,
    prefix: config.s3.prefix,
    ...(config.s3.objectLock ? { objectLock: config.s3.objectLock } : {}),
  });
}

/** A time-stamping authority's answer: a token with its certificates is a few KiB. */
const MAX_TSA_ANSWER = 1024 * 1024;

/**
 * The evidence upkeep's sources and policy: the archive's trust (the same checks), the configured TSA and revocation
 * URLs. Revocation data is asked only for the certificates that trust covers, of the configured services or of
 * allow-listed ones a certificate names (src/evidence/revocation-client.ts); the TSA over a bounded fetch.
 */
function upkeepDeps(upkeep: NonNullable<WorkerConfig['upkeep']>, config: WorkerConfig) {
  const trust = config.evidence.trust;
  const tsaOrigin = new URL(upkeep.tsaUrl).origin;
  return {
    sources: {
      timestampAuthority: new HttpTimestampAuthority(upkeep.tsaUrl, {
        fetch: boundedFetch({
          maxBytes: MAX_TSA_ANSWER,
          timeoutMs: 30_000,
          // Configured by the operator: it may be internal (the sandbox in the dev stack, a service on the cluster network).
          policy: new OutboundPolicy({ allow: [tsaOrigin], internal: [tsaOrigin] }),
        }),
      }),
      revocationProvider: new HttpRevocationProvider({
        ocspUrl: upkeep.ocspUrl,
        crlUrl: upkeep.crlUrl,
        trust,
        allowedUrls: config.allowedUrls,
        internalHosts: config.allowedInternalHosts,
      }),
    },
    policy: {
      trust,
      horizonMs: upkeep.renewBeforeMs,
      renewTimestampedBefore: upkeep.renewTimestampedBefore,
    },
  };
}

/** `<package version>+<first 12 hex of the bundle's SHA-256>`: a new build id exactly when the workflow code changes. */
async function buildIdOf(bundle: { code: string } | { codePath: string }): Promise<string> {
  const code = 'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');
  return `${await packageVersion()}+${createHash('sha256').update(code).digest('hex').slice(0, 12)}`;
}

/**
 * The version in the nearest package.json above this module, as Node finds a module's package: the repository's,
 * from the source (src/worker/) and from the compiled code (dist/src/worker/, in the image /app/dist/src/worker/) alike.
 */
async function packageVersion(): Promise<string> {
  for (let dir = new URL('./', import.meta.url); ; dir = new URL('../', dir)) {
    try {
      return (JSON.parse(await readFile(new URL('package.json', dir), 'utf8')) as { version: string }).version;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (new URL('../', dir).href === dir.href) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`, { cause: err });
    }
  }
}

const quietBundler = new DefaultLogger('WARN');

/**
 * Makes this worker's version the deployment's current one (what `temporal worker deployment
 * set-current-version` does), once the server has seen the worker poll: the dev stack's single worker.
 */
async function setCurrentVersion(
  connectionOptions: Parameters<typeof Connection.connect>[0],
  namespace: string,
  deployment: { name: string; buildId: string },
): Promise<void> {
  const connection = await Connection.connect(connectionOptions);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await connection.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: deployment.name,
          buildId: deployment.buildId,
          identity: 'esign-worker',
        });
        return;
      } catch (err) {
        if (attempt >= 100) {
          throw new Error(`could not make ${deployment.name}/${deployment.buildId} current: ${(err as Error).message}`, { cause: err });
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    await connection.close();
  }
}

/**
 * Starts the transaction worker. It connects with @temporalio/envconfig
 * settings (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS,
 * profiles), so the same worker runs against the dev server, a self-hosted
 * cluster or Temporal Cloud.
 */
export async function startWorker(config: WorkerConfig): Promise<StartedWorker> {
  const { connectionOptions, namespace } = loadClientConnectConfig();
  const dataConverter = orchestratorDataConverter(process.env, { plaintext: workerPlaintextPolicy() });
  // A key store that is lost or was never created stops the worker now: a new empty one would make every payload
  // written under its data keys unreadable, so it is never created here (ESIGN_KEY_STORE, docs/codec.md).
  await aesGcmCodecOf(dataConverter?.payloadCodecs)?.dataKeys?.store();
  const tracing = tracingPluginFromEnv('esign-worker');
  const connection = await NativeConnection.connect(connectionOptions);
  const client = new EsignClient({
    baseUrl: config.providerUrl,
    token: config.providerToken,
    ...(config.providerCa ? { ca: config.providerCa } : {}),
  });
  // A versioned worker names its version after the exact workflow code it runs.
  const bundle = config.workflowBundlePath
    ? { codePath: config.workflowBundlePath }
    : config.deployment
      ? { code: await bundleWorkflows(quietBundler) }
      : undefined;
  const deployment = config.deployment
    ? { name: config.deployment.name, buildId: config.deployment.buildId ?? (await buildIdOf(bundle!)) }
    : undefined;
  // The holds register, read by the purge and the archive: connected on first use, closed with the worker. Its
  // answers are encrypted as every payload of this worker's workflows is, so it decodes them with the same converter.
  let holdsClient: Client | undefined;
  const holdsReader = () =>
    (holdsClient ??= new Client({
      connection: Connection.lazy(connectionOptions),
      namespace: namespace ?? 'default',
      ...(dataConverter ? { dataConverter } : {}),
    }));
  const worker = await createEsignWorker({
    connection,
    namespace: namespace ?? 'default',
    taskQueue: config.taskQueue,
    deps: {
      client,
      archive: archiveStore(config),
      documentRoots: config.documentRoots,
      allowedUrls: config.allowedUrls,
      maxDocumentBytes: config.maxDocumentBytes,
      zipLimits: config.zipLimits,
      retention: config.retention,
      // The purge reads the holds register just before it destroys anything; the archive, after it commits.
      holds: () => listLegalHolds(holdsReader()),
      minReconcileInterval: config.minReconcileInterval,
      callbackSecrets: config.callbackSecrets,
      callbackDelivery: { ...DEFAULT_CALLBACK_DELIVERY, attempts: config.callbackAttempts },
      evidence: config.evidence,
      ...(config.upkeep ? { upkeep: upkeepDeps(config.upkeep, config) } : {}),
      // Bulk send's files live beside the templates.
      ...(config.templateStore ? { templates: templateStoreAt(config.templateStore), objects: objectStoreAt(config.templateStore) } : {}),
    },
    ...(bundle ? { workflowBundle: bundle } : {}),
    ...(deployment ? { deployment } : {}),
    tuning: config.tuning,
    ...(dataConverter ? { dataConverter } : {}),
    ...(tracing ? { plugins: [tracing] } : {}),
  });
  if (config.upkeep || config.purgeEvery) {
    // The Schedules are the namespace's; each worker start brings them to this configuration (a pause stays).
    const temporal = new Client({ connection: await Connection.connect(connectionOptions), namespace: namespace ?? 'default' });
    try {
      if (config.upkeep) await ensureEvidenceUpkeepSchedule(temporal, { taskQueue: config.taskQueue, every: config.upkeep.every });
      if (config.purgeEvery) await ensureRecordsRetentionSchedule(temporal, { taskQueue: config.taskQueue, every: config.purgeEvery });
    } finally {
      await temporal.connection.close();
    }
  }
  // From here on every request of this process goes through the guard (src/http/outbound.ts): document sources and
  // callbacks (undici's request), and what libraries fetch on their own (Node's fetch uses the same dispatcher), to
  // the allow-list only, and to internal addresses only for hosts allowed to be internal. The provider's client
  // (its own pool, its own CA), Temporal (gRPC) and S3 (node:https) do not go through it.
  const withdraw = permitOutbound({ allow: config.allowedUrls, internal: config.allowedInternalHosts });
  installOutboundGuard();
  const done = worker.run().finally(async () => {
    withdraw();
    await holdsClient?.connection.close();
    await client.close();
    await connection.close();
  });
  if (deployment && config.deployment?.setCurrent) {
    try {
      await setCurrentVersion(connectionOptions, namespace ?? 'default', deployment);
    } catch (err) {
      // Not left polling behind a failed start.
      worker.shutdown();
      await done.catch(() => undefined);
      throw err;
    }
  }
  return {
    worker,
    deployment,
    done,
    async close() {
      worker.shutdown();
      await done;
    },
  };
}
