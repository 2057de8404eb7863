/**
 * What the driver asks of the server about one run once its steps are done:
 * whether the transaction closed and how, where it stalled if it did not,
 * which inbox or late-completion workflows are still open, and every history.
 */
import { eventLogIdFor } from '../src/definitions/event-log.js';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../src/definitions/transaction.js';
import { inboxIdFor } from '../src/definitions/inbox.js';
import { lateCompletionIdFor } from '../src/definitions/late-completion.js';
import type { esignTransaction } from '../workflows/esign-transaction.js';
import { eventName, type MessageOutcome, type RecordedHistory, type WorkflowEnd } from './observation.js';
import type { ProviderModel } from './provider-model.js';

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class Aftermath {
  constructor(
    private readonly client: Client,
    private readonly workflowId: string,
    private readonly referenceId: string,
    private readonly model: ProviderModel,
    private readonly messages: readonly MessageOutcome[],
  ) {}

  private handle(): WorkflowHandle<typeof esignTransaction> {
    return this.client.workflow.getHandle<typeof esignTransaction>(this.workflowId);
  }

  /** The inbox and late-completion workflows of this referenceId's transactions that are still running. */
  async openAfterEnd(): Promise<string[]> {
    const ids = this.model.byReference(this.referenceId).flatMap((t) => [inboxIdFor(t.id), lateCompletionIdFor(t.id)]);
    const open: string[] = [];
    for (const id of ids) {
      const status = await this.client.workflow
        .getHandle(id)
        .describe()
        .then(
          (d) => d.status.name,
          () => 'NOT_FOUND',
        );
      if (status === 'RUNNING') open.push(id);
    }
    return open;
  }

  /** The transaction's end, once its last run has closed. */
  async closedEnd(): Promise<WorkflowEnd | undefined> {
    const status = (await this.handle().describe()).status.name;
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return undefined;
    try {
      // Closed: the result is at hand, so waiting on it skips no time.
      const closedAt = (await this.handle().describe()).closeTime?.getTime();
      return { kind: 'result', result: await this.handle().result(), ...(closedAt !== undefined ? { closedAt } : {}) };
    } catch (err) {
      const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
      return { kind: 'failed', type: (cause as { type?: string } | undefined)?.type, message: errorText(cause ?? err) };
    }
  }

  async whereItStalled(): Promise<string> {
    const described = await this.handle()
      .describe()
      .catch(() => undefined);
    const raw = described?.raw;
    const history = await this.handle()
      .fetchHistory()
      .catch(() => undefined);
    const events = (history?.events ?? []).slice(-15).map((e) => eventName(e.eventType));
    const phase = await this.handle()
      .query(statusQuery)
      .then(
        (s) => s.phase,
        (err: unknown) => `unknown (${errorText(err)})`,
      );
    return `phase ${phase}; pending activities ${JSON.stringify(
      raw?.pendingActivities?.map((a) => ({
        type: a.activityType?.name,
        attempt: a.attempt,
        ...(a.lastFailure?.message ? { lastFailure: a.lastFailure.message } : {}),
      })) ?? [],
    )}; pending updates ${
      this.messages
        .filter((m) => m.outcome === 'pending')
        .map((m) => m.step)
        .join(', ') || 'none'
    }; last events ${events.join(' ')}`;
  }

  /** Terminates what is still running, through `terminate` (the lane's, which leaves the test server's clock free). */
  async terminateLeftovers(terminate: (workflowId: string) => Promise<unknown>): Promise<void> {
    const ids = [
      this.workflowId,
      // The event log waits out its retention (30 days) after the transaction: the next run's time would reach it.
      eventLogIdFor(this.referenceId),
      ...this.model.byReference(this.referenceId).flatMap((t) => [inboxIdFor(t.id), lateCompletionIdFor(t.id)]),
    ];
    for (const id of ids) await terminate(id);
  }

  /** Every run of the transaction's latest chain (following continue-as-new back from the last). */
  async transactionRuns(): Promise<RecordedHistory[]> {
    let runId: string | undefined = (await this.handle().describe()).runId;
    const runs: RecordedHistory[] = [];
    while (runId) {
      const history = await this.client.workflow.getHandle(this.workflowId, runId).fetchHistory();
      runs.unshift({ workflowId: this.workflowId, runId, history });
      runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    }
    return runs;
  }

  /** Every run of the transaction (following continue-as-new back from the last), its event log, its inbox and any late completion. */
  async collectHistories(): Promise<RecordedHistory[]> {
    const out: RecordedHistory[] = [];
    out.push(...(await this.transactionRuns()));
    // The event log's last run too: its replay and its workflow tasks are checked like the others'.
    const ids = [
      eventLogIdFor(this.referenceId),
      ...this.model.byReference(this.referenceId).flatMap((t) => [inboxIdFor(t.id), lateCompletionIdFor(t.id)]),
    ];
    {
      for (const id of ids) {
        const h = this.client.workflow.getHandle(id);
        const described = await h.describe().catch(() => undefined);
        if (!described) continue;
        out.push({ workflowId: id, runId: described.runId, history: await h.fetchHistory() });
      }
    }
    return out;
  }
}
