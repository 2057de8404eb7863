/** What the workflow code under exploration offers, so the explorer widens as it gains it. */
import { defineUpdate } from '@temporalio/workflow';
import * as definitions from '../src/definitions/transaction.js';
import { EsignTransactionInput as InputSchema } from '../src/transaction/input.js';

/** `retryArchive`, the operator's update once the workflow waits for a repaired archive (absent from older workflow code). */
const RETRY_ARCHIVE = 'retryArchive';
export const retryArchiveUpdate = defineUpdate<unknown, []>(RETRY_ARCHIVE);
/** The approvers' updates (absent from workflow code older than approvals before sending). */
const APPROVE = 'approve';
const REJECT = 'reject';

export interface WorkflowFeatures {
  /** The workflow waits in `archive_invalid` for `retryArchive` instead of failing on a refused ZIP. */
  retryArchive: boolean;
  /** The input takes `maxHistoryEvents`, the bound on one run's history. */
  maxHistoryEvents: boolean;
  /** The input names approvers (`approval`) and the workflow takes their `approve` and `reject` updates. */
  approvals: boolean;
  /** The legal holds register and the records retention (workflows/legal-holds.ts, workflows/records-retention.ts). */
  records: boolean;
}

/**
 * What the workflow code offers, so the explorer widens as it gains it: this checkout's, or that of another
 * checkout whose `workflows/index.ts` is given (its definitions and input schema are read from it).
 */
export async function workflowFeatures(workflowsIndex?: string): Promise<WorkflowFeatures> {
  const from = async (...candidates: string[]): Promise<Record<string, unknown>> => {
    for (const candidate of candidates) {
      const loaded = (await import(new URL(candidate, `file://${workflowsIndex}`).href).catch(() => undefined)) as
        Record<string, unknown> | undefined;
      if (loaded) return loaded;
    }
    throw new Error(`none of ${candidates.join(', ')} next to ${workflowsIndex}`);
  };
  // The names moved over time: workflows/definitions.ts, then src/definitions/transaction.ts.
  const defs = workflowsIndex
    ? await from('../src/definitions/transaction.ts', 'definitions.ts')
    : (definitions as Record<string, unknown>);
  const input = (workflowsIndex ? await from('../src/transaction/input.ts') : { EsignTransactionInput: InputSchema }) as {
    EsignTransactionInput: { shape: Record<string, unknown> };
  };
  const defines = (name: string) =>
    Object.values(defs).some((d) => typeof d === 'object' && d !== null && (d as { name?: unknown }).name === name);
  return {
    retryArchive: defines(RETRY_ARCHIVE),
    maxHistoryEvents: 'maxHistoryEvents' in input.EsignTransactionInput.shape,
    approvals: 'approval' in input.EsignTransactionInput.shape && defines(APPROVE) && defines(REJECT),
    records: workflowsIndex
      ? await import(new URL('../src/definitions/records.ts', `file://${workflowsIndex}`).href).then(
          () => true,
          () => false,
        )
      : true,
  };
}
