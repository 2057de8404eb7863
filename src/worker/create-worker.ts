import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';

export const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

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
  tuning?: Pick<
    WorkerOptions,
    'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows' | 'shutdownGraceTime'
  >;
}

/** The worker of the transaction workflow, with its activities bound to their dependencies. */
export async function createEsignWorker(options: EsignWorkerOptions): Promise<Worker> {
  const activities = createActivities(options.deps);
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    activities: options.wrapActivities ? options.wrapActivities(activities) : activities,
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...options.tuning,
  });
}
