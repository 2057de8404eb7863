/**
 * The explorer's status query, past a way the time-skipping test server loses one.
 *
 * A query that reaches a run while a workflow task is running waits for that task's end, as on a real server. When
 * that task continues the run as new, the test server refuses the completion (explore/sticky-queues.ts,
 * TEST_SERVER_CLOSED_RUN) after starting the new run, and the query is then sent to no worker (seed 2301704 hung on
 * it). A real server answers it from the closed run's history.
 *
 * So the query is addressed to the run current when it is sent, and given up with QUERY_LOST_TO_CONTINUE_AS_NEW, which
 * the checks excuse as the test server's, only when all of these hold after `LOST_AFTER_MS` of real time: no answer,
 * the test server refused a completion that way since the query was sent, and that run is closed as continued as new
 * with no continue-as-new event in its history (the refused completion's, which the server dropped). Any other query
 * waits: if it never comes, the run is reported as hung.
 */
import type { Client } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

export const QUERY_LOST_TO_CONTINUE_AS_NEW =
  'explorer: the query reached a run as it continued as new, which the test server never answers';

/** Real time a query has to be answered before the test server counts as having lost it. */
const LOST_AFTER_MS = 5_000;
const LOOK_EVERY_MS = 1_000;

/**
 * `query` of the workflow's current run. `refusedAsClosed` counts the completions the test server has refused as of a
 * closed run so far (explore/lane.ts).
 */
export async function queryRun<R>(
  client: Client,
  workflowId: string,
  query: QueryDefinition<R, []>,
  refusedAsClosed: () => number,
): Promise<R> {
  const current = await client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      (d) => d.runId,
      () => undefined,
    );
  const handle = client.workflow.getHandle(workflowId, current);
  const refusedBefore = refusedAsClosed();
  const abandon = new AbortController();
  const answer = client.withAbortSignal(abandon.signal, () => handle.query(query));
  const sentAt = Date.now();
  let watching = true;
  const lost = new Promise<never>((_, reject) => {
    const look = async () => {
      if (!watching) return;
      if (current !== undefined && Date.now() - sentAt >= LOST_AFTER_MS && refusedAsClosed() > refusedBefore) {
        const status = await handle.describe().then(
          (d) => d.status.name,
          () => undefined,
        );
        // The refusal was this run's: its history lacks the continue-as-new the refused completion would have added.
        const last = status === 'CONTINUED_AS_NEW' ? (await handle.fetchHistory().catch(() => undefined))?.events?.at(-1) : undefined;
        if (watching && last && !last.workflowExecutionContinuedAsNewEventAttributes) {
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
