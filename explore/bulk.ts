/**
 * What a `bulk` schedule needs that a transaction's does not: a template and an object store in memory, the real
 * bulk activities (activities/bulk.ts) over them, and two stand-ins where the test server falls short or a fault
 * needs a seam. The time-skipping test server has no visibility queries (count, list), so the batch's counts are
 * read by describing each started row's workflow (its status and `EsignStatus`), as visibility would report them
 * without its lag. A worker that dies in the middle of a page is the page's activity started on the first `rows` of
 * the page only, then failed as a lost worker's activity is: its retry starts the whole page, finding the rows
 * already started (activities/bulk.ts takes a row that ran before as the batch's own).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { createBulkActivities } from '../activities/bulk.js';
import { batchKeys, type BatchCounts } from '../src/definitions/bulk.js';
import { EsignStatus } from '../src/definitions/search-attributes.js';
import { workflowIdFor } from '../src/definitions/transaction.js';
import { FailureType } from '../src/failures.js';
import type { ObjectStore } from '../src/storage/object-store.js';
import type { StoredTemplate } from '../src/templates/reader.js';
import type { BulkTemplates } from '../src/bulk/template-rows.js';

export const BULK_TEMPLATE_REF = 'Explore@1';

/** The bulk schedule's template: one signing role, one document. */
export function bulkTemplate(): StoredTemplate {
  return {
    ref: BULK_TEMPLATE_REF,
    name: 'Explore',
    version: 1,
    digest: '0'.repeat(64),
    createdAt: '2026-01-01T00:00:00.000Z',
    definition: {
      name: 'Explore',
      roles: [{ name: 'Signer' }],
      fields: [],
      documents: [
        {
          title: 'Contract',
          sha256: '1'.repeat(64),
          tags: [{ type: 'SIGNATURETEMPLATE', role: 'Signer', x: 72, y: 120, width: 200, height: 30, page: 0 }],
        },
      ],
      defaults: {},
    } as unknown as StoredTemplate['definition'],
  };
}

/** The CSV of `rows` rows (line 2 onwards), one signer each. */
export function bulkCsv(rows: number): string {
  const people = ['Ada Lovelace <ada@example.com>', 'Alan Turing <alan@example.com>', 'Grace Hopper <grace@example.com>'];
  return ['Signer', ...Array.from({ length: rows }, (_, i) => people[i % people.length]!)].join('\n') + '\n';
}

export class MemoryStore implements ObjectStore {
  readonly location = 'memory://explorer/';
  readonly objects = new Map<string, Buffer>();
  async put(key: string, body: Buffer | string): Promise<void> {
    this.objects.set(key, Buffer.from(body));
  }
  async get(key: string): Promise<Buffer | undefined> {
    return this.objects.get(key);
  }
  urlOf(key: string): string {
    return `${this.location}${key}`;
  }
}

export interface BulkActivityOptions {
  store: MemoryStore;
  taskQueue: string;
  /** Calls of `startBatchPage` (1-based) that die after starting this many rows of their page. */
  crashMidPage: readonly { call: number; rows: number }[];
}

/** The bulk activities of a `bulk` schedule: the real ones over the memory store, with the two stand-ins. */
export function createBulkExplorerActivities(options: BulkActivityOptions): ReturnType<typeof createBulkActivities> {
  const { store } = options;
  const template = bulkTemplate();
  const templates: BulkTemplates = {
    async get(ref: string) {
      if (ref !== BULK_TEMPLATE_REF && ref !== 'Explore') throw new Error(`no template ${ref}`);
      return template;
    },
  };
  const real = createBulkActivities({ store, templates, taskQueue: options.taskQueue });
  let pageCalls = 0;
  return {
    ...real,

    async startBatchPage(input) {
      const crash = options.crashMidPage.find((c) => c.call === ++pageCalls);
      if (!crash) return real.startBatchPage(input);
      // The first rows only, through a store whose page holds just them; then the worker is gone.
      const key = batchKeys.page(input.batchId, input.page);
      const rows = JSON.parse(store.objects.get(key)?.toString('utf8') ?? '[]') as unknown[];
      const partial = new MemoryStore();
      for (const [k, v] of store.objects) partial.objects.set(k, v);
      partial.objects.set(key, Buffer.from(JSON.stringify(rows.slice(0, crash.rows))));
      await createBulkActivities({ store: partial, templates, taskQueue: options.taskQueue }).startBatchPage(input);
      throw ApplicationFailure.retryable(
        `explorer fault: the worker died after starting ${crash.rows} row(s) of page ${input.page + 1}`,
        FailureType.ProviderUnavailable,
      );
    },

    /** What visibility would count, read from each started row's workflow (the test server has no visibility queries). */
    async batchCounts({ batchId }: { batchId: string }): Promise<BatchCounts> {
      const { client } = Context.current();
      const counts: BatchCounts = { inFlight: 0, waiting: 0, completed: 0, endedOtherwise: 0, failed: 0 };
      const prefix = batchKeys.started(batchId, 0).replace(/[0-9]+\.json$/, '');
      for (const [key, body] of store.objects) {
        if (!key.startsWith(prefix)) continue;
        for (const row of JSON.parse(body.toString('utf8')) as { referenceId?: string }[]) {
          if (!row.referenceId) continue;
          const described = await client.workflow
            .getHandle(workflowIdFor(row.referenceId))
            .describe()
            .catch(() => undefined);
          if (!described) continue;
          const status = described.typedSearchAttributes.get(EsignStatus);
          if (described.status.name === 'RUNNING') {
            if (status === 'uploading' || status === 'creating') counts.inFlight++;
            else counts.waiting++;
          } else if (described.status.name === 'COMPLETED') {
            if (status === 'completed') counts.completed++;
            else counts.endedOtherwise++;
          } else counts.failed++;
        }
      }
      return counts;
    },
  };
}
