/** What one run of a schedule left behind, as explore/checks.ts judges it. */
import proto from '@temporalio/proto';
import type { EsignTransactionResult } from '../src/definitions/transaction.js';
import type { ModelStatus, ProviderModel } from './provider-model.js';
import type { Schedule } from './schedule.js';

export type WorkflowEnd =
  | { kind: 'result'; result: EsignTransactionResult }
  | { kind: 'failed'; type: string | undefined; message: string }
  | { kind: 'stalled'; where: string }
  | { kind: 'not-started'; message: string };

export interface MessageOutcome {
  /** The step that sent it ("cancel@+5400s"). */
  step: string;
  kind: 'signingUrl' | 'replace' | 'cancel' | 'retryArchive' | 'query';
  outcome: 'pending' | 'ok' | 'failed' | 'error';
  type?: string;
  message?: string;
  value?: unknown;
}

export interface RecordedHistory {
  workflowId: string;
  runId: string;
  history: proto.temporal.api.history.v1.IHistory;
}

export interface Observation {
  schedule: Schedule;
  referenceId: string;
  workflowId: string;
  end: WorkflowEnd;
  /** The provider's transactions of this referenceId when the end was observed, before any late move. */
  atEnd: { id: string; status: ModelStatus; everSigned: boolean }[];
  model: ProviderModel;
  messages: MessageOutcome[];
  histories: RecordedHistory[];
  /** Workflows (inbox, late completion) still open when the run was over. */
  stillOpen: string[];
  /** Webhooks a direct signal could not deliver because the workflow had ended (harmless: the inbox path is the durable one). */
  directAfterEnd: number;
  /** Worker restarts, and the workflow tasks the dead workers' sticky queues held that were handed back. */
  restarts: { count: number; tasksHandedBack: number };
  /** The server's clock when the workflow started (epoch ms): steps are at `startedAt + at`. */
  startedAt: number;
  simulatedMs: number;
}

let eventNames: Record<number, string> | undefined;
/** `WORKFLOW_TASK_FAILED` for the proto's number, as the Web UI names events. */
export function eventName(type: number | null | undefined): string {
  eventNames ??= Object.fromEntries(
    Object.entries(proto.temporal.api.enums.v1.EventType)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => [v as number, k.replace('EVENT_TYPE_', '')]),
  );
  return eventNames[type ?? -1] ?? String(type);
}
