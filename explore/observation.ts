/** What one run of a schedule left behind, as explore/checks.ts judges it. */
import proto from '@temporalio/proto';
import type { EsignTransactionResult } from '../src/definitions/transaction.js';
import type { ModelStatus, ProviderModel } from './provider-model.js';
import type { RecordsModel } from './records.js';
import type { Schedule, ScheduleSetup } from './schedule.js';
import type { EventLogView } from '../src/definitions/event-log.js';
import type { BatchResult } from '../src/definitions/bulk.js';
import type { EvidenceUpkeepResult } from '../src/definitions/evidence-upkeep.js';
import type { ServerHint } from './server-hints.js';
import type { UpkeepModel } from './upkeep.js';

export type WorkflowEnd =
  | { kind: 'result'; result: EsignTransactionResult; /** The server's clock when it closed (epoch ms). */ closedAt?: number }
  | { kind: 'failed'; type: string | undefined; message: string }
  | { kind: 'stalled'; where: string }
  | { kind: 'not-started'; message: string };

export interface MessageOutcome {
  /** The step that sent it ("cancel@+5400s"). */
  step: string;
  kind:
    | 'signingUrl'
    | 'replace'
    | 'correct'
    | 'approve'
    | 'reject'
    | 'cancel'
    | 'retryArchive'
    | 'query'
    | 'redeliver'
    | 'lateRetry'
    | 'bulkCancel';
  /** `signingUrl`: for whom; `replace`: the status asked for; `correct`: the kind of correction. */
  participantId?: string;
  asked?: string;
  /** `correct` of the deadline: the deadline it asked for (which an answer that never came may have set). */
  deadline?: string;
  /** `approve`, `reject`: the approver named (maybe one the transaction does not name). */
  approverId?: string;
  /** The order its answer came back in, among all the run's messages (1: first). */
  answerOrder?: number;
  /** `query`: how many answers had come back when it was asked (what they say, it must show). */
  answersBefore?: number;
  outcome: 'pending' | 'ok' | 'failed' | 'error';
  type?: string;
  message?: string;
  value?: unknown;
  /** The schedule's transaction it was sent to (absent: the first). */
  part?: number;
  /** `redeliver`: the sequence it asked after, and how many delivery attempts there were when it was asked and answered. */
  after?: number;
  deliveriesAtAsk?: number;
  deliveriesAtAnswer?: number;
  /** `retryArchive` by the operator: archive refusals so far when it was asked. */
  refusalsAtAsk?: number;
  /** `lateRetry`: what the operator's retry should meet (before the fix: refused; after: archived), and of which transaction. */
  expected?: 'refused' | 'archived';
  transactionId?: string;
}

/** One transaction of a schedule (a `reuse` schedule has several with one referenceId). */
export interface PartRecord {
  setup: ScheduleSetup;
  end: WorkflowEnd;
  /** The provider's transactions of the referenceId when this one's end was observed. */
  atEnd: { id: string; status: ModelStatus; everSigned: boolean }[];
  participantIds: string[];
  /** The server's clock at its start and at its close (epoch ms). */
  startedAt: number;
  closedAt?: number;
  /** Its chain of runs, collected before the next transaction started (the last one's are in `histories`). */
  histories: RecordedHistory[];
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
  /** A `reuse` (or any kinded) schedule: each of its transactions. */
  parts?: PartRecord[];
  /** The event log's last view, read after the endpoint came back (kinded schedules with a callback). */
  eventLog?: EventLogView;
  /** Why the event log could not be read, if it could not. */
  eventLogError?: string;
  /** The operator's and the server's moves the schedule made, and the evidence upkeep's walks. */
  operations?: Operations;
  /** A schedule with holds and retention walks: what they did and what the records were at rest (explore/records.ts). */
  records?: RecordsModel;
  /** A `bulk` schedule: the batch's end and each row's transaction. */
  bulk?: {
    batchId: string;
    end: { kind: 'result'; result: BatchResult } | Exclude<WorkflowEnd, { kind: 'result' }>;
    rows: { referenceId: string; end?: WorkflowEnd; startedAt?: number }[];
  };
}

/** A hint the server gave a run (explore/server-hints.ts), when, and by which step. */
export interface GivenHint extends ServerHint {
  /** The server's clock when it was given (epoch ms). */
  at: number;
  /** The run's longest wait between two tasks of its own (its poll interval at most), which bounds when it learns of it. */
  maxPollMs: number;
}

export interface UpkeepWalk {
  workflowId: string;
  startedAt: number;
  /** The archive's keys, and each archive's renewals, when the walk started. */
  keysAtStart: string[];
  renewalsAtStart: Record<string, number>;
  end:
    | { kind: 'result'; result: EvidenceUpkeepResult; closedAt?: number }
    | { kind: 'failed'; message: string }
    | { kind: 'stalled'; where: string };
}

export interface Operations {
  hints: GivenHint[];
  /** An operator's `temporal workflow terminate`: of what, when, and whether it was running (then terminated). */
  terminations: {
    workflow: 'eventLog' | 'lateCompletion';
    workflowId: string;
    at: number;
    terminated: boolean;
    transactionId?: string;
  }[];
  /** The provider's completion webhooks sent once more. */
  completionsAgain: { transactionId: string; at: number }[];
  upkeeps: UpkeepWalk[];
  upkeep: UpkeepModel;
  /** How each run that continued as new asked for its next run's versioning behaviour (numbers), where the worker was seen asking. */
  continuedAs: Record<string, number>;
  /** The moves that acted (a terminate of a running workflow, a hint given to a running run, a walk started), by step kind. */
  acted: Record<string, number>;
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
