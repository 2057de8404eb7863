/**
 * A query the explorer sends, and the one way the time-skipping test server loses one.
 *
 * A query that reaches a run while a workflow task is running waits for that task's end, as on a real server. When
 * that task continues the run as new, the test server then sends the query nowhere: not with the new run's first
 * task, and not to a worker of the closed run (the worker asked for nothing more; seed 2301704 hung on it). A real
 * server answers such a query from the closed run's history once the run closes.
 *
 * So a query still unanswered after `LOST_AFTER_MS` of real time, addressed to a run that has since been continued
 * as new, is given up with QUERY_LOST_TO_CONTINUE_AS_NEW, which the checks excuse as the test server's. One addressed
 * to a run still current goes on waiting: if it never comes, the run is reported as hung.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

export const QUERY_LOST_TO_CONTINUE_AS_NEW =
  'explorer: the query reached a run as it continued as new, which the test server never answers';

/** Real time a query has to be answered before a continue-as-new meanwhile counts as what lost it. */
const LOST_AFTER_MS = 5_000;
const LOOK_EVERY_MS = 2_000;

export async function queryRun<R>(client: Client, workflowId: string, query: QueryDefinition<R, []>): Promise<R> {
  const handle: WorkflowHandle = client.workflow.getHandle(workflowId);
  const addressed = await handle.describe().then(
    (d) => d.runId,
    () => undefined,
  );
  const abandon = new AbortController();
  const answer = client.withAbortSignal(abandon.signal, () => handle.query(query));
  const sentAt = Date.now();
  let watching = true;
  const lost = new Promise<never>((_, reject) => {
    const look = async () => {
      if (!watching) return;
      if (Date.now() - sentAt >= LOST_AFTER_MS && addressed !== undefined) {
        const current = await handle.describe().then(
          (d) => d.runId,
          () => undefined,
        );
        if (watching && current !== undefined && current !== addressed) {
          abandon.abort();
          reject(new Error(QUERY_LOST_TO_CONTINUE_AS_NEW));
          return;
        }
      }
      setTimeout(() => void look(), LOOK_EVERY_MS).unref();
    };
    setTimeout(() => void look(), LOOK_EVERY_MS).unref();
  });
  try {
    return await Promise.race([answer, lost]);
  } finally {
    watching = false;
  }
}
