// A worker in its own process, so a test can SIGKILL it. With
// CRASH_AFTER_CREATE=1 it kills itself right after the provider created the
// transaction (201 received) and before the activity completes; with
// CRASH_IN_PAGE=N, right after a bulk send's page N started its transactions,
// before the activity reports them; with CRASH_IN_DELIVERY=N, right after it sent event N of an event log (the
// endpoint answered), before the activity reports it. TEMPLATE_STORE gives it templates and batch files;
// CALLBACK_SECRET and ALLOWED_URLS let it send events.
import { LocalArchiveStore } from '../../src/archive/store.js';
import { EsignClient } from '../../src/esign/client.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { LocalTemplateStore } from '../../src/templates/index.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { NativeConnection } from '@temporalio/worker';

const env = process.env as Record<string, string>;
const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS! });
// PROVIDER_HEADERS_TIMEOUT_MS shortens the client's give-up, and with it how long a write's retry after a crash waits
// for what the dead worker may have sent (activities/support/write-attempts.ts).
const client = new EsignClient({
  baseUrl: env.PROVIDER_URL!,
  token: env.PROVIDER_TOKEN!,
  ...(env.PROVIDER_HEADERS_TIMEOUT_MS ? { connectTimeoutMs: 1_000, headersTimeoutMs: Number(env.PROVIDER_HEADERS_TIMEOUT_MS) } : {}),
});
const worker = await createEsignWorker({
  connection,
  taskQueue: env.TASK_QUEUE!,
  deps: {
    minReconcileInterval: '1 second',
    client,
    archive: new LocalArchiveStore(env.ARCHIVE_DIR!),
    documentRoots: [env.DOCUMENT_ROOT!],
    ...(env.CALLBACK_SECRET ? { callbackSecrets: [env.CALLBACK_SECRET], allowedUrls: env.ALLOWED_URLS!.split(',') } : {}),
    callbackDelivery: { attempts: 20, firstDelayMs: 200, maxDelayMs: 1_000 },
    ...(env.TEMPLATE_STORE
      ? { templates: new LocalTemplateStore(env.TEMPLATE_STORE), objects: new LocalObjectStore(env.TEMPLATE_STORE) }
      : {}),
  },
  wrapActivities: (activities) => ({
    ...activities,
    async createTransaction(request) {
      const ref = await activities.createTransaction(request);
      if (env.CRASH_AFTER_CREATE === '1') process.kill(process.pid, 'SIGKILL');
      return ref;
    },
    async attemptLoggedEvent(input) {
      const outcome = await activities.attemptLoggedEvent(input);
      if (env.CRASH_IN_DELIVERY !== undefined && input.event.sequence === Number(env.CRASH_IN_DELIVERY))
        process.kill(process.pid, 'SIGKILL');
      return outcome;
    },
    async startBatchPage(input) {
      const started = await activities.startBatchPage(input);
      if (env.CRASH_IN_PAGE !== undefined && input.page === Number(env.CRASH_IN_PAGE)) process.kill(process.pid, 'SIGKILL');
      return started;
    },
  }),
});
process.stdout.write('worker-ready\n');
await worker.run();
await connection.close();
