// Scenario "waiting": many transactions waiting for signatures at once. The
// worker's memory while they wait, then the time for all of them to complete
// when every signer signs in one burst (webhooks -> bridge -> inboxes ->
// workflows -> archives). BENCH_WAITING_N=5000 is the size; the default
// keeps the scenario within a few minutes on a 2-core machine.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { request } from 'undici';
import { startEsignTransaction } from '../src/client/transactions.js';
import { EsignClient } from '../src/esign/client.js';
import { samplePdf } from '../src/sandbox/pdf.js';
import { ensureTemporalBinaries, executableFor } from '../src/temporal/binaries.js';
import { WORKFLOW_TYPE } from '../workflows/definitions.js';
import { esignSearchAttributes } from '../workflows/search-attributes.js';
import { fmt, freePort, markdownTable, mib, pool, processUsage, prebuiltBundle, record, startProcess, startSandboxProcess, stopProcess } from './lib.js';

const N = Number(process.env.BENCH_WAITING_N ?? 1000);
const CONCURRENCY = 50;

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function manyWaiting(command: string): Promise<void> {
  const { cli } = await ensureTemporalBinaries('cli');
  const temporal = await TestWorkflowEnvironment.createLocal({
    server: { executable: executableFor(cli), ip: '127.0.0.1', searchAttributes: [...esignSearchAttributes], log: { format: 'pretty', level: 'error' } },
  });
  const work = await mkdtemp(join(tmpdir(), 'bench-waiting-'));
  await mkdir(join(work, 'docs'), { recursive: true });
  const pdf = join(work, 'docs', 'agreement.pdf');
  await writeFile(pdf, await samplePdf('Agreement'));
  const bridgePort = await freePort();
  const sandbox = await startSandboxProcess(join(work, 'sandbox'), { SANDBOX_WEBHOOK_URLS: `http://127.0.0.1:${bridgePort}/webhooks/esign` });
  const common = { TEMPORAL_ADDRESS: temporal.address, ESIGN_TASK_QUEUE: 'bench-waiting', LOG_LEVEL: 'warn', ESIGN_METRICS_ADDRESS: '' };
  const bridge = await startProcess('src/bridge/main.ts', { ...common, BRIDGE_PORT: String(bridgePort), ESIGN_WEBHOOK_SECRETS: sandbox.webhookSecret, BRIDGE_LOG: 'false' }, /listening/);
  const worker = await startProcess(
    'src/worker/main.ts',
    { ...common, ESIGN_WORKFLOW_BUNDLE: await prebuiltBundle(work), ESIGN_PROVIDER_URL: sandbox.url, ESIGN_PROVIDER_TOKEN: sandbox.token, ESIGN_ARCHIVE_DIR: join(work, 'archive'), LOG_LEVEL: 'info' },
    /worker polling/,
  );
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection });
  const provider = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token });
  const count = async (status: string) =>
    (await client.workflow.count(`WorkflowType = '${WORKFLOW_TYPE}' AND EsignStatus = '${status}'`)).count;
  try {
    // One upload shared by every transaction (a StoragePath may back several), so the run measures waiting, not uploading.
    const [uploaded] = await provider.uploadDocuments([{ path: pdf }]);
    const participants: { transactionId?: string; participantId: string; referenceId: string }[] = [];
    let t0 = performance.now();
    await pool(N, CONCURRENCY, async (i) => {
      const participantId = crypto.randomUUID();
      const referenceId = `waiting-${i}-${Date.now()}`;
      participants.push({ participantId, referenceId });
      await startEsignTransaction(
        client,
        {
          referenceId,
          documents: [{ title: 'Agreement', source: { storagePath: uploaded!.StoragePath }, tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }] }],
          participants: [{ id: participantId, email: 's@example.com', firstName: 'Sam', lastName: 'Signer', authenticationType: 'none', twoFactorContact: 'email' }],
          reconcileInterval: '1 day',
        },
        { taskQueue: 'bench-waiting' },
      );
    });
    await until(`${N} waiting transactions`, async () => (await count('awaiting_signatures')) >= N, 30 * 60_000);
    const creationSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000)); // let the worker settle
    const waiting = await processUsage(worker.pid!);
    const status = await readFile(`/proc/${worker.pid}/status`, 'utf8');
    const rssNow = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;

    // The burst: everyone signs; the sandbox sends every webhook at once.
    const byReference = new Map(participants.map((p) => [p.referenceId, p]));
    for (let offset = 0; ; offset += 500) {
      const page = await provider.listTransactions({ status: 'esign_pending', limit: 500, offset });
      for (const t of page.data) {
        const p = t.referenceId ? byReference.get(t.referenceId) : undefined;
        if (p) p.transactionId = t.id;
      }
      if (offset + 500 >= page.total) break;
    }
    t0 = performance.now();
    await pool(N, CONCURRENCY, async (i) => {
      const p = participants[i]!;
      const res = await request(`${sandbox.url}/_sandbox/transactions/${p.transactionId}/participants/${p.participantId}/sign`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      await res.body.dump();
    });
    const signedSeconds = (performance.now() - t0) / 1000;
    await until(`${N} completed transactions`, async () => (await count('completed')) >= N, 30 * 60_000);
    const burstSeconds = (performance.now() - t0) / 1000;
    const after = await processUsage(worker.pid!);

    await record('many waiting transactions', command, markdownTable([
      {
        'waiting transactions': N,
        'created and waiting after (s)': fmt(creationSeconds, 0),
        'worker RSS while all wait (MiB)': fmt(mib(rssNow), 0),
        'worker peak RSS (MiB)': fmt(mib(after.peakRssBytes), 0),
        'all signed in (s)': fmt(signedSeconds, 1),
        'all archived after the burst began (s)': fmt(burstSeconds, 1),
        'completions/s': fmt(N / burstSeconds, 1),
      },
    ]), [
      `Starts at concurrency ${CONCURRENCY}; completion counted through visibility (EsignStatus = 'completed'), which may lag by about a second.`,
      `Worker CPU used until all were waiting (creating them): ${fmt(waiting.cpuSeconds, 1)} s.`,
      `Worker RSS grows with the number of cached workflows (each transaction and its inbox; ESIGN_MAX_CACHED_WORKFLOWS bounds it).`,
    ]);
  } finally {
    await provider.close();
    await connection.close();
    await stopProcess(worker);
    await stopProcess(bridge);
    await sandbox.stop();
    await temporal.teardown();
    await rm(work, { recursive: true, force: true });
  }
}
