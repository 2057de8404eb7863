// Scenario "waiting": many transactions waiting for signatures at once. The
// worker's memory while they wait, then the time for all of them to complete
// when every signer signs in one burst (webhooks -> bridge -> inboxes ->
// workflows -> archives). BENCH_WAITING_N=5000 is the size; the default
// keeps the scenario within a few minutes on a 2-core machine. BENCH_WAITING_CACHE
// lists the worker's workflow cache sizes to run with (ESIGN_MAX_CACHED_WORKFLOWS,
// default 250, the worker's own default): one size that holds every waiting
// transaction and its inbox, and one that evicts, show what the cache costs.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startEsignTransaction } from '../src/client/transactions.js';
import { WORKFLOW_TYPE } from '../src/definitions/transaction.js';
import { pool, processUsage } from '../tools/support/measure.js';
import { fmt, markdownTable, mib, record } from './lib.js';
import { benchSigner, startBenchStack } from './stack.js';

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
  const caches = (process.env.BENCH_WAITING_CACHE ?? '250').split(',').map(Number);
  const rows: Record<string, string | number>[] = [];
  let creationCpu = '';
  for (const cache of caches) {
    const { row, cpu } = await waitingWithCache(cache);
    rows.push(row);
    creationCpu += `${creationCpu ? '; ' : ''}${fmt(cpu, 1)} s with a cache of ${cache}`;
  }
  await record('many waiting transactions', command, markdownTable(rows), [
    `Starts at concurrency ${CONCURRENCY}; completion counted through visibility (EsignStatus = 'completed'), which may lag by about a second.`,
    `Worker CPU used until all were waiting (creating them): ${creationCpu}.`,
    'One workflow per waiting transaction (webhooks reach it directly; no inbox starts on this path): a cache smaller than N evicts, and an evicted workflow is replayed from its history when its webhook arrives.',
  ]);
}

async function waitingWithCache(cache: number): Promise<{ row: Record<string, string | number>; cpu: number }> {
  const stack = await startBenchStack('waiting', { workerEnv: { ESIGN_MAX_CACHED_WORKFLOWS: String(cache) } });
  const { client, provider, pdf, sign } = stack;
  // This scenario's own transactions: its task queue's (another scenario's may share the server, BENCH_ONE_DEV_SERVER).
  const ours = `WorkflowType = '${WORKFLOW_TYPE}' AND TaskQueue = '${stack.taskQueue}'`;
  const count = async (status: string) => (await client.workflow.count(`${ours} AND EsignStatus = '${status}'`)).count;
  try {
    // One upload shared by every transaction (a StoragePath may back several), so the run measures waiting, not uploading.
    const [uploaded] = await provider.uploadDocuments([{ path: pdf }]);
    // The worker archives only what it can tie to our upload: a document uploaded beforehand comes with its hash.
    const uploadedSha256 = createHash('sha256')
      .update(await readFile(pdf))
      .digest('hex');
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
          documents: [
            {
              title: 'Agreement',
              source: { storagePath: uploaded!.StoragePath, sha256: uploadedSha256 },
              tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
            },
          ],
          participants: [benchSigner(participantId)],
          reconcileInterval: '1 day',
        },
        { taskQueue: stack.taskQueue },
      );
    });
    // A transaction that fails (a refused input, say) never waits: stop at once rather than at the time limit.
    const failed = async () => (await client.workflow.count(`${ours} AND ExecutionStatus = 'Failed'`)).count;
    await until(
      `${N} waiting transactions`,
      async () => {
        if ((await failed()) > 0) throw new Error('a transaction failed instead of waiting for its signer (see the worker log)');
        return (await count('awaiting_signatures')) >= N;
      },
      30 * 60_000,
    );
    const creationSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000)); // let the worker settle
    const waiting = await processUsage(stack.worker.child.pid!);
    const status = await readFile(`/proc/${stack.worker.child.pid}/status`, 'utf8');
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
    await pool(N, CONCURRENCY, async (i) => sign(participants[i]!.transactionId!, participants[i]!.participantId));
    const signedSeconds = (performance.now() - t0) / 1000;
    await until(`${N} completed transactions`, async () => (await count('completed')) >= N, 30 * 60_000);
    const burstSeconds = (performance.now() - t0) / 1000;
    const after = await processUsage(stack.worker.child.pid!);

    return {
      row: {
        'waiting transactions': N,
        'workflow cache (ESIGN_MAX_CACHED_WORKFLOWS)': cache,
        'created and waiting after (s)': fmt(creationSeconds, 0),
        'worker RSS while all wait (MiB)': fmt(mib(rssNow), 0),
        'worker peak RSS (MiB)': fmt(mib(after.peakRssBytes), 0),
        'all signed in (s)': fmt(signedSeconds, 1),
        'all archived after the burst began (s)': fmt(burstSeconds, 1),
        'completions/s': fmt(N / burstSeconds, 1),
      },
      cpu: waiting.cpuSeconds,
    };
  } finally {
    await stack.stop();
  }
}
