// Bulk send on the real dev server, with the sandbox over HTTP signing and the real webhook bridge: one template,
// one CSV, one transaction per row; submitted twice, it runs once; bad rows are reported by line; a 429 storm
// slows it without losing a row; a cancel withdraws what is not signed and archives what is.
//
// The tests run side by side: each spends most of its time waiting (on a pace, on retries after 429s, on a dead
// worker's activities timing out), not computing. Each has a sandbox of its own, so that one test's faults, bridge
// and provider transactions never reach another's.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, type Launched } from '../../tools/support/launch.js';
import { batchProgress, cancelBatch, sendBulk } from '../../src/client/bulk.js';
import { BatchFileError } from '../../src/bulk/rows.js';
import { batchKeys, BULK_PAGE_ROWS, BULK_WORKFLOW_TYPE, type BatchResult } from '../../src/definitions/bulk.js';
import { startFromTemplate } from '../../src/client/templates.js';
import { bulkBed, ndaCsv, resultRows, type BulkBed } from '../support/bulk.js';
import { eventually } from '../support/eventually.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { connectToTestServer, type TemporalTestContext } from '../support/temporal.js';

let ctx: TemporalTestContext;
beforeAll(async () => {
  ctx = await connectToTestServer();
});
afterAll(async () => {
  await ctx?.close();
});

/** The provider's transactions of a batch: one per started row, never two. */
async function providerTransactions(sandbox: TestSandbox, batchId: string): Promise<string[]> {
  const refs: string[] = [];
  for (let offset = 0; ; offset += 500) {
    const { data } = await sandbox.client.listTransactions({ limit: 500, offset });
    refs.push(...data.map((t) => t.referenceId ?? '').filter((r) => r.startsWith(`${batchId}.`)));
    if (data.length < 500) return refs;
  }
}

async function finish(
  bed: BulkBed,
  batchId: string,
  ownReferences: string[] = [],
): Promise<{ result: BatchResult; rows: Record<string, string>[] }> {
  const signer = bed.signBatch(batchId, ownReferences);
  const result = (await ctx.client.workflow.getHandle(batchId).result()) as BatchResult;
  await signer.stop();
  const csv = await bed.objects.get(batchKeys.result(batchId));
  return { result, rows: resultRows(csv!) };
}

/** A test's own sandbox and bulk bed (worker not started), closed after it whatever happens. */
async function withBed(prefix: string, test: (bed: BulkBed, sandbox: TestSandbox) => Promise<void>): Promise<void> {
  const sandbox = await startTestSandbox();
  try {
    const bed = await bulkBed(ctx, sandbox, prefix);
    try {
      await test(bed, sandbox);
    } finally {
      await bed.close();
    }
  } finally {
    await sandbox.close();
  }
}

/** Two full pages and one row over: every page boundary a batch has, at half the cost of four pages. */
const ROWS = 2 * BULK_PAGE_ROWS + 1;

describe.concurrent('a bulk send', () => {
  // Alone, before the others: beside their sealing and archiving (in this same process) it took minutes, not seconds,
  // as its waits compound (a retry after each 429, the sandbox's webhook backoff when the bridge's lookup at the
  // provider fails, the batch's count interval growing while nothing moves).
  it('goes through a 429 storm from the provider without losing or doubling a row', { concurrent: false, timeout: 600_000 }, async () => {
    await withBed('bulk-429', async (bed, sandbox) => {
      await bed.startWorker();
      await sandbox.control.setFaults({ rateLimitRate: 0.5 });
      const before = (await sandbox.control.injectedFaults())['429'] ?? 0;
      const batch = await sendBulk(ctx.client, bed, {
        name: 'Storm',
        template: 'NDA-bulk',
        csv: ndaCsv(10),
        maxInFlight: 10,
        rowsPerSecond: 100,
        taskQueue: bed.taskQueue,
      });
      const { result, rows } = await finish(bed, batch.batchId);
      await sandbox.control.setFaults({});
      expect((await sandbox.control.injectedFaults())['429'] ?? 0).toBeGreaterThan(before + 10);
      expect(result).toMatchObject({ phase: 'done', started: 10, completed: 10 });
      expect(rows.every((r) => r.outcome === 'completed')).toBe(true);
      expect((await providerTransactions(sandbox, batch.batchId)).length).toBe(10);
    });
  });

  it(`sends a ${ROWS}-row batch (three pages, the last of one row) to completion: one transaction per row, each archived, and a resubmission starts nothing`, async ({
    expect,
  }) => {
    await withBed('bulk-pages', async (bed, sandbox) => {
      await bed.startWorker();
      const request = {
        name: 'Fifty-one NDAs',
        template: 'NDA-bulk',
        csv: ndaCsv(ROWS),
        maxInFlight: 50,
        rowsPerSecond: 100,
        taskQueue: bed.taskQueue,
      };
      const first = await sendBulk(ctx.client, bed, request);
      expect(first).toMatchObject({ existing: false, rows: ROWS, template: bed.template.ref });
      expect(await sendBulk(ctx.client, bed, request)).toMatchObject({ batchId: first.batchId, existing: true });

      const { result, rows } = await finish(bed, first.batchId);
      expect(result).toMatchObject({ phase: 'done', rows: ROWS, started: ROWS, invalid: 0, completed: ROWS, failed: 0, endedOtherwise: 0 });
      expect(rows).toHaveLength(ROWS);
      expect(rows.map((r) => r.line)).toEqual(Array.from({ length: ROWS }, (_, i) => String(i + 2)));
      expect(rows.every((r) => r.outcome === 'completed' && r.archive!.startsWith('file:') && r.transactionId !== '')).toBe(true);
      expect(new Set(rows.map((r) => r.archive)).size).toBe(ROWS);
      expect((await providerTransactions(sandbox, first.batchId)).sort()).toEqual(rows.map((r) => r.referenceId).sort());

      // Ended: submitting it again finds it, and no second batch workflow exists.
      expect(await sendBulk(ctx.client, bed, request)).toMatchObject({ batchId: first.batchId, existing: true });
      const batches = await ctx.client.workflow.count(`WorkflowId = '${first.batchId}' AND WorkflowType = '${BULK_WORKFLOW_TYPE}'`);
      expect(batches.count).toBe(1);
    });
  }, 900_000);

  it('reports each bad row with its line and reason and sends the others; refuses a header no row could fit before starting anything', async ({
    expect,
  }) => {
    await withBed('bulk-bad', async (bed) => {
      await bed.startWorker();
      // A transaction outside the batch holds the reference a row asks for.
      const taken = `taken-${Date.now()}`;
      await startFromTemplate(
        ctx.client,
        bed.templates,
        'NDA-bulk',
        {
          referenceId: taken,
          roles: { Employee: { name: 'Outside Person', email: 'outside@example.com' } },
          values: { company: 'Other' },
        },
        { taskQueue: bed.taskQueue },
      );
      const csv = Buffer.from(
        [
          'Employee,company,referenceId',
          'Ada Lovelace <ada@example.com>,Acme,',
          'not an address,Acme,',
          'Grace Hopper <grace@example.com>,,',
          'Alan Turing <alan@example.com>,Acme,,surplus',
          `Edsger Dijkstra <edsger@example.com>,Acme,${taken}`,
          'Barbara Liskov <barbara@example.com>,Acme,',
          `Donald Knuth <donald@example.com>,Acme,${taken}-dup`,
          `Frances Allen <frances@example.com>,Acme,${taken}-dup`,
        ].join('\n'),
      );
      const batch = await sendBulk(ctx.client, bed, { name: 'Some bad rows', template: 'NDA-bulk', csv, taskQueue: bed.taskQueue });
      const { result, rows } = await finish(bed, batch.batchId, [`${taken}-dup`]);
      expect(result).toMatchObject({ phase: 'done', rows: 8, started: 3, invalid: 5, completed: 3 });
      const byLine: Record<string, Record<string, string>> = Object.fromEntries(rows.map((r) => [r.line!, r]));
      expect(byLine['2']).toMatchObject({ outcome: 'completed' });
      expect(byLine['7']).toMatchObject({ outcome: 'completed' });
      expect(byLine['3']?.outcome).toBe('invalid');
      expect(byLine['3']?.error).toMatch(/Employee/);
      expect(byLine['4']?.outcome).toBe('invalid');
      expect(byLine['4']?.error).toMatch(/company/);
      expect(byLine['5']).toMatchObject({ outcome: 'invalid', error: 'the row has 1 cell(s) more than the header' });
      expect(byLine['6']?.outcome).toBe('invalid');
      expect(byLine['6']?.error).toMatch(/already used by another transaction/);
      // Two rows naming one referenceId would share a transaction: the second is refused.
      expect(byLine['8']?.outcome).toBe('completed');
      expect(byLine['9']).toMatchObject({ outcome: 'invalid', error: `referenceId "${taken}-dup" repeats line 8` });
      expect(result.firstInvalid.map((r) => r.line)).toEqual([3, 4, 5, 6, 9]);

      // A header that no row could fit: refused before anything is stored or started.
      const wrong = sendBulk(ctx.client, bed, {
        name: 'Wrong header',
        template: 'NDA-bulk',
        csv: Buffer.from('Employe,company\nA <a@x.org>,B\n'),
      });
      await expect(wrong).rejects.toThrow(BatchFileError);
      await expect(wrong).rejects.toThrow(/column "Employe" is neither a role nor a merge field.*no column for role "Employee"/);
      await expect(sendBulk(ctx.client, bed, { name: 'No template', template: 'Nope@1', csv: ndaCsv(1) })).rejects.toThrow(/Nope@1/);
    });
  }, 300_000);

  it('cancels mid-batch: what is signed is archived, what is not is withdrawn, rows not started are reported', async ({ expect }) => {
    await withBed('bulk-cancel', async (bed) => {
      await bed.startWorker();
      const sentAt = Date.now();
      const batch = await sendBulk(ctx.client, bed, {
        name: 'To cancel',
        template: 'NDA-bulk',
        csv: ndaCsv(100),
        maxInFlight: 10,
        // Paced (and so also a test of the pace): at one row a second, the cancel comes long before the last row.
        rowsPerSecond: 1,
        taskQueue: bed.taskQueue,
      });
      // Some are signed (and archived) before the cancel: five transactions of the batch completed, as visibility says.
      // Not the batch's own count, which it takes between pages: by the time it shows five, the signer had signed
      // forty more, each sealed and archived for nothing.
      const signer = bed.signBatch(batch.batchId);
      const completedTransactions = async () =>
        (await ctx.client.workflow.count(`EsignBatchId = '${batch.batchId}' AND EsignStatus = 'completed'`)).count;
      await eventually('a few transactions signed', async () => (await completedTransactions()) >= 5, 180_000);
      await signer.stop();
      // Rows started once the signer stopped stay unsigned: wait for two, so the cancel has something to withdraw
      // (a signer that kept up with the pace could otherwise have signed every started row).
      const startedUnsigned = (await batchProgress(ctx.client, batch.batchId)).started + 2;
      await eventually(
        'rows started after the signer stopped',
        async () => (await batchProgress(ctx.client, batch.batchId)).started >= startedUnsigned,
        60_000,
      );
      const answered = await cancelBatch(ctx.client, batch.batchId, 'wrong template');
      // The pace held: about one row a second (a page's first row may follow the last row of the page before at once).
      expect(answered.started).toBeLessThanOrEqual(Math.ceil((Date.now() - sentAt) / 1_000) + 4);
      expect(answered.started).toBeLessThan(100);
      const result = (await ctx.client.workflow.getHandle(batch.batchId).result()) as BatchResult;
      const rows = resultRows((await bed.objects.get(batchKeys.result(batch.batchId)))!);
      expect(result.phase).toBe('cancelled');
      expect(rows).toHaveLength(100);
      const outcomes = rows.reduce<Record<string, number>>((n, r) => ({ ...n, [r.outcome!]: (n[r.outcome!] ?? 0) + 1 }), {});
      expect(outcomes.completed).toBeGreaterThanOrEqual(5);
      expect(outcomes.cancelled).toBeGreaterThan(0);
      expect(outcomes.not_started).toBeGreaterThan(0);
      expect(outcomes.completed! + outcomes.cancelled! + outcomes.not_started!).toBe(100);
      expect(rows.filter((r) => r.outcome === 'completed').every((r) => r.archive!.startsWith('file:'))).toBe(true);
      const running = await ctx.client.workflow.count(`EsignBatchId = '${batch.batchId}' AND ExecutionStatus = 'Running'`);
      expect(running.count).toBe(0);
    });
  }, 600_000);

  it('survives a worker killed in the middle of a page: the page is started again and no row gets a second transaction', async ({
    expect,
  }) => {
    await withBed('bulk-crash', async (bed, sandbox) => {
      const children: Launched[] = [];
      const child = async (extra: Record<string, string> = {}) => {
        const c = await launch(fileURLToPath(new URL('../support/worker-child.ts', import.meta.url)), {
          env: {
            TEMPORAL_ADDRESS: inject('temporalAddress'),
            PROVIDER_URL: sandbox.running.url,
            PROVIDER_TOKEN: sandbox.token,
            TASK_QUEUE: bed.taskQueue,
            ARCHIVE_DIR: bed.archiveDir,
            DOCUMENT_ROOT: bed.storeDir,
            TEMPLATE_STORE: bed.storeDir,
            // A create the crash cut off is retried once it can no longer land: twice the client's give-up.
            PROVIDER_HEADERS_TIMEOUT_MS: '3000',
            ...extra,
          },
          ready: /worker-ready/,
        });
        children.push(c);
        return c;
      };
      try {
        // Killed right after its second page (lines 27-36) started its transactions, before it could report them.
        const first = await child({ CRASH_IN_PAGE: '1' });
        const batch = await sendBulk(ctx.client, bed, {
          name: 'Crash',
          template: 'NDA-bulk',
          csv: ndaCsv(35),
          maxInFlight: 35,
          rowsPerSecond: 100,
          taskQueue: bed.taskQueue,
        });
        expect(await first.exited).toBe('SIGKILL');
        await child();
        const { result, rows } = await finish(bed, batch.batchId);
        expect(result).toMatchObject({ phase: 'done', started: 35, completed: 35 });
        expect(rows.every((r) => r.outcome === 'completed')).toBe(true);
        const refs = await providerTransactions(sandbox, batch.batchId);
        expect(refs).toHaveLength(35);
        expect(new Set(refs).size).toBe(35);
      } finally {
        await Promise.all(children.map((c) => c.kill()));
      }
    });
  }, 600_000);
});
