import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { LocalArchiveStore } from '../../activities/archive-store.js';
import { EsignClient } from '../esign/client.js';
import type { WorkerConfig } from './config.js';
import { createEsignWorker } from './create-worker.js';

export interface StartedWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after shutdown() or a fatal error). */
  done: Promise<void>;
  close(): Promise<void>;
}

/**
 * Connects with @temporalio/envconfig settings (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS, profiles), so the same worker runs
 * against the dev server, a self-hosted cluster or Temporal Cloud.
 */
export async function startWorker(config: WorkerConfig): Promise<StartedWorker> {
  const { connectionOptions, namespace } = loadClientConnectConfig();
  const connection = await NativeConnection.connect(connectionOptions);
  const client = new EsignClient({ baseUrl: config.providerUrl, token: config.providerToken, ...(config.providerCa ? { ca: config.providerCa } : {}) });
  const worker = await createEsignWorker({
    connection,
    namespace: namespace ?? 'default',
    taskQueue: config.taskQueue,
    deps: {
      client,
      archive: new LocalArchiveStore(config.archiveDir),
      documentRoots: config.documentRoots,
      allowedUrls: config.allowedUrls,
      maxDocumentBytes: config.maxDocumentBytes,
    },
    ...(config.workflowBundlePath ? { workflowBundle: { codePath: config.workflowBundlePath } } : {}),
    tuning: config.tuning,
  });
  const done = worker.run().finally(async () => {
    await client.close();
    await connection.close();
  });
  return {
    worker,
    done,
    async close() {
      worker.shutdown();
      await done;
    },
  };
}
