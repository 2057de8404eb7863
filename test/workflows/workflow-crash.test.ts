import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { launch, type Launched } from '../../tools/support/launch.js';
import { statusQuery } from '../../src/definitions/transaction.js';
import { samplePdfFiles, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { connectToTestServer, type TemporalTestContext, uniqueTaskQueue } from '../support/temporal.js';

const childScript = fileURLToPath(new URL('../support/worker-child.ts', import.meta.url));

let temporal: TemporalTestContext;
let sandbox: TestSandbox;
const children: Launched[] = [];
beforeAll(async () => {
  temporal = await connectToTestServer();
  sandbox = await startTestSandbox();
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await sandbox?.close();
  await temporal?.close();
});

/** The worker child (test/support/worker-child.ts) in its own process, so a crash kills only it. */
function startChild(env: Record<string, string>): Promise<Launched> {
  return launch(childScript, { env, ready: /worker-ready/ }).then((c) => {
    children.push(c);
    return c;
  });
}

it('a worker killed right after the provider created the transaction leaves exactly one transaction, and the workflow completes', async () => {
  const [pdf] = await samplePdfFiles(['Crash test']);
  const taskQueue = uniqueTaskQueue('crash');
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    PROVIDER_URL: sandbox.running.url,
    PROVIDER_TOKEN: sandbox.token,
    TASK_QUEUE: taskQueue,
    ARCHIVE_DIR: `${dirname(pdf!)}/archive`,
    DOCUMENT_ROOT: dirname(pdf!),
    // The retry after the crash waits until the dead worker's create can no longer land: twice the client's give-up.
    PROVIDER_HEADERS_TIMEOUT_MS: '3000',
  };
  const first = await startChild({ ...env, CRASH_AFTER_CREATE: '1' });
  const referenceId = `crash-${Date.now()}`;
  const { handle } = await startEsignTransaction(
    temporal.client,
    {
      referenceId,
      reconcileInterval: '1 second',
      documents: [
        {
          title: 'Crash test',
          source: { path: pdf! },
          tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
        },
      ],
      participants: [
        { email: 'c@example.com', firstName: 'Cara', lastName: 'Crash', authenticationType: 'none', twoFactorContact: 'email' },
      ],
    },
    { taskQueue },
  );
  expect(await first.exited).toBe('SIGKILL');
  const mine = async () => (await sandbox.client.listTransactions({ limit: 500 })).data.filter((t) => t.referenceId === referenceId);
  expect(await mine()).toHaveLength(1); // the provider did create it before the crash

  await startChild(env);
  let status = await handle.query(statusQuery);
  await expect
    .poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 60_000, interval: 250 })
    .toBe('awaiting_signatures');
  for (const p of status.participants) await sandbox.control.signAs(status.transactionId!, p.id);
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const transactions = await mine();
  expect(transactions).toHaveLength(1);
  expect(transactions[0]!.id).toBe(result.transactionId);
}, 120_000);
