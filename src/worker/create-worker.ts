import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, Runtime, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { aesGcmCodecOf, CODEC_KEYS_IDENTITY_TAG } from '../codec/aes-gcm-codec.js';
import { failureConverterPath } from '../codec/data-converter.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import { UndecodableRuns, type UndecodableReporting } from './undecodable.js';

/** The workflows' entry, bundled at start when no prebuilt bundle is given: the source under tsx, the compiled module in dist/. */
export const workflowsPath = fileURLToPath(
  new URL(`../../workflows/index.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url),
);

/**
 * The prebuilt workflow bundle production workers load. It carries the failure converter that encodes failures'
 * messages (src/codec/failure-converter.ts): a workflow's own failure is converted inside the bundle, so a bundle
 * without it would store the message in clear even when the worker encrypts everything else.
 */
export async function bundleWorkflows(logger?: Parameters<typeof bundleWorkflowCode>[0]['logger']): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath, failureConverterPath, ...(logger ? { logger } : {}) });
  return code;
}

export interface EsignWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (production); when absent the workflows are bundled from source at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Replace or wrap activities (tests hold a step back this way). */
  wrapActivities?: (activities: ReturnType<typeof createActivities>) => ReturnType<typeof createActivities>;
  /** e.g. the OpenTelemetry plugin (src/observability/tracing.ts). */
  plugins?: WorkerOptions['plugins'];
  /** Encrypting data converter (src/codec); plain when absent. */
  dataConverter?: WorkerOptions['dataConverter'];
  /** Where runs whose payloads this worker cannot decode are reported (src/worker/undecodable.ts); the runtime's by default. */
  undecodable?: UndecodableReporting;
  /**
   * Worker Versioning (docs/operations.md): the deployment this worker belongs to and its build id. Without it the
   * worker is unversioned (tests, a single worker). With it, transactions are pinned to the version they started
   * on and move at continue-as-new; the inbox, late completions and the upkeep follow the current version.
   */
  deployment?: { name: string; buildId: string };
  tuning?: Pick<
    WorkerOptions,
    'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows' | 'shutdownGraceTime'
  >;
}

/**
 * The workflow code a worker runs: the bundle it is given; else the prebuilt one the process names in
 * ESIGN_WORKFLOW_BUNDLE (a test run builds one for all the workers it starts, rather than one per worker; a
 * plugin may add workflow interceptors, which only a bundle of its own can hold); else the source, bundled now.
 */
function workflowCode(options: EsignWorkerOptions): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (options.workflowBundle) return { workflowBundle: options.workflowBundle };
  const prebuilt = process.env.ESIGN_WORKFLOW_BUNDLE;
  if (prebuilt && !options.plugins?.length) return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath };
}

/** The worker of the transaction workflow, with its activities bound to their dependencies. */
export async function createEsignWorker(options: EsignWorkerOptions): Promise<Worker> {
  // A batch's transactions start on the worker's own task queue unless the batch names one.
  const activities = createActivities({ taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE, ...options.deps });
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    identity: workerIdentity(options.dataConverter),
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...workflowCode(options),
    activities: options.wrapActivities ? options.wrapActivities(activities) : activities,
    ...(options.dataConverter ? { dataConverter: reportingUndecodable(options.dataConverter, options.undecodable) } : {}),
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...(options.deployment
      ? {
          workerDeploymentOptions: {
            useWorkerVersioning: true,
            version: { deploymentName: options.deployment.name, buildId: options.deployment.buildId },
            // Each workflow type declares its own (setWorkflowOptions); this covers any that would not.
            defaultVersioningBehavior: 'PINNED',
          },
        }
      : {}),
    ...options.tuning,
  });
}

/** The data converter with each codec's decode failures reported, once per workflow (src/worker/undecodable.ts). */
function reportingUndecodable(
  dataConverter: NonNullable<WorkerOptions['dataConverter']>,
  reporting: UndecodableReporting = {},
): NonNullable<WorkerOptions['dataConverter']> {
  if (!dataConverter.payloadCodecs?.length) return dataConverter;
  const runs = new UndecodableRuns(() => ({
    logger: reporting.logger ?? Runtime.instance().logger,
    metricMeter: reporting.metricMeter ?? Runtime.instance().metricMeter,
  }));
  return { ...dataConverter, payloadCodecs: dataConverter.payloadCodecs.map((codec) => runs.wrap(codec)) };
}

/**
 * The worker's identity, as Temporal shows it (pollers, history): the default `pid@host`, and the codec key ids it
 * decrypts (`esign-codec-keys=`, empty for a worker without the codec). Key ids are not secret; a client reads them
 * from the task queue's pollers to refuse a start no worker could decrypt (src/client/codec-check.ts).
 */
function workerIdentity(dataConverter: WorkerOptions['dataConverter']): string {
  const codec = aesGcmCodecOf(dataConverter?.payloadCodecs);
  return `${process.pid}@${hostname()} ${CODEC_KEYS_IDENTITY_TAG}${codec?.keyIds.join(',') ?? ''}`;
}
