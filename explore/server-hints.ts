/**
 * What a real server tells a workflow that the time-skipping test server never does: that it should continue as new
 * (`continueAsNewSuggested`: its history grew past the server's limit) and, for a pinned run, that its deployment's
 * current version changed (`targetWorkerDeploymentVersionChanged`: Worker Versioning). A workflow reads both from the
 * WORKFLOW_TASK_STARTED event of each task (sdk-core's workflow machines), and a real server records them there.
 *
 * Here a hint names a run and the first task that carries it: every WORKFLOW_TASK_STARTED event of that run from that
 * event on carries the flag, as a real server keeps saying so until the run continues as new. The lane's worker
 * reaches the server through explore/sticky-queues.ts's pass-through, which sets the flags in every task and history
 * page it forwards to the worker (`patchResponse`); the histories the checks replay are patched the same way
 * (`patchHistory`), so a replay meets what the worker met. A hint takes effect from the first task the worker has not
 * yet been shown, so no task is ever shown two ways.
 */
import { gunzipSync } from 'node:zlib';
import proto from '@temporalio/proto';

type IHistory = proto.temporal.api.history.v1.IHistory;
const {
  PollWorkflowTaskQueueResponse,
  GetWorkflowExecutionHistoryRequest,
  GetWorkflowExecutionHistoryResponse,
  RespondWorkflowTaskCompletedRequest,
  RespondWorkflowTaskCompletedResponse,
} = proto.temporal.api.workflowservice.v1;
const { EventType } = proto.temporal.api.enums.v1;

export const POLL_WORKFLOW_TASK_PATH = '/temporal.api.workflowservice.v1.WorkflowService/PollWorkflowTaskQueue';
export const WORKFLOW_TASK_COMPLETED_PATH = '/temporal.api.workflowservice.v1.WorkflowService/RespondWorkflowTaskCompleted';
export const HISTORY_PATH = '/temporal.api.workflowservice.v1.WorkflowService/GetWorkflowExecutionHistory';
/** The calls whose answers carry workflow tasks or history to the worker. */
export const HINTED_PATHS: ReadonlySet<string> = new Set([POLL_WORKFLOW_TASK_PATH, WORKFLOW_TASK_COMPLETED_PATH, HISTORY_PATH]);

export type ServerHintKind = 'suggestContinueAsNew' | 'targetVersionChanged';

export interface ServerHint {
  kind: ServerHintKind;
  workflowId: string;
  runId: string;
  /** The first WORKFLOW_TASK_STARTED event that carries it. */
  fromEventId: number;
}

export class ServerHints {
  /** Off between schedules that give no hints: the pass-through then forwards answers untouched, unread. */
  enabled = false;
  readonly hints: ServerHint[] = [];
  /**
   * How each run continued as new, by the versioning behaviour its command asked for (the test server does not record
   * it in the run's ContinuedAsNew event, as a real server does): `CONTINUE_AS_NEW_VERSIONING_BEHAVIOR_*` numbers.
   */
  readonly continuedAs = new Map<string, number>();
  /** The highest WORKFLOW_TASK_STARTED event id shown to the worker, per run (while enabled). */
  readonly #shown = new Map<string, number>();
  /** Which run each task the worker was given belongs to, by its task token. */
  readonly #tasks = new Map<string, string>();

  /** From the next task the worker is shown of `runId`, the server says `kind`. */
  give(kind: ServerHintKind, workflowId: string, runId: string): ServerHint {
    const existing = this.hints.find((h) => h.kind === kind && h.runId === runId);
    if (existing) return existing;
    const hint = { kind, workflowId, runId, fromEventId: (this.#shown.get(runId) ?? 0) + 1 };
    this.hints.push(hint);
    return hint;
  }

  /** Forgets a schedule's hints. */
  reset(enabled: boolean): void {
    this.enabled = enabled;
    this.hints.length = 0;
    this.#shown.clear();
    this.#tasks.clear();
    this.continuedAs.clear();
  }

  /** Sets the flags the hints call for on one run's events, in place; returns whether any was set. */
  patchHistory(runId: string, history: IHistory | null | undefined): boolean {
    let changed = false;
    const hints = this.hints.filter((h) => h.runId === runId);
    for (const e of history?.events ?? []) {
      if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED || !e.workflowTaskStartedEventAttributes) continue;
      const id = Number(e.eventId);
      for (const h of hints) {
        if (id < h.fromEventId) continue;
        const attributes = e.workflowTaskStartedEventAttributes;
        if (h.kind === 'suggestContinueAsNew') attributes.suggestContinueAsNew = true;
        else attributes.targetWorkerDeploymentVersionChanged = true;
        changed = true;
      }
    }
    return changed;
  }

  /**
   * One gRPC answer on its way to the worker (`request` is the call's own message, framed): the same answer, with the
   * flags set in the tasks and history it carries, and the tasks it shows noted.
   */
  patchResponse(path: string, request: Buffer, response: Buffer): Buffer {
    const body = unframe(response);
    if (!body) return response;
    if (path === HISTORY_PATH) {
      const runId = GetWorkflowExecutionHistoryRequest.decode(unframe(request) ?? Buffer.alloc(0)).execution?.runId ?? '';
      const message = GetWorkflowExecutionHistoryResponse.decode(body);
      this.#note(runId, message.history);
      return this.patchHistory(runId, message.history) ? frame(GetWorkflowExecutionHistoryResponse.encode(message).finish()) : response;
    }
    if (path === WORKFLOW_TASK_COMPLETED_PATH) {
      const message = RespondWorkflowTaskCompletedResponse.decode(body);
      const task = message.workflowTask;
      if (!task) return response;
      const runId = task.workflowExecution?.runId ?? '';
      if (task.taskToken) this.#tasks.set(Buffer.from(task.taskToken).toString('base64'), runId);
      this.#note(runId, task.history);
      return this.patchHistory(runId, task.history) ? frame(RespondWorkflowTaskCompletedResponse.encode(message).finish()) : response;
    }
    const message = PollWorkflowTaskQueueResponse.decode(body);
    const runId = message.workflowExecution?.runId ?? '';
    if (message.taskToken) this.#tasks.set(Buffer.from(message.taskToken).toString('base64'), runId);
    this.#note(runId, message.history);
    return this.patchHistory(runId, message.history) ? frame(PollWorkflowTaskQueueResponse.encode(message).finish()) : response;
  }

  /** A workflow task completion on its way to the server: its continue-as-new command, and the behaviour it asks for. */
  noteCompletion(request: Buffer): void {
    const message = RespondWorkflowTaskCompletedRequest.decode(unframe(request) ?? Buffer.alloc(0));
    const runId = this.#tasks.get(Buffer.from(message.taskToken ?? []).toString('base64'));
    if (!runId) return;
    for (const c of message.commands ?? []) {
      const attributes = c.continueAsNewWorkflowExecutionCommandAttributes;
      if (attributes) this.continuedAs.set(runId, attributes.initialVersioningBehavior ?? 0);
    }
  }

  #note(runId: string, history: IHistory | null | undefined): void {
    if (!runId) return;
    for (const e of history?.events ?? []) {
      if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) continue;
      const id = Number(e.eventId);
      if (id > (this.#shown.get(runId) ?? 0)) this.#shown.set(runId, id);
    }
  }
}

/** The message of a gRPC frame (a flag byte, a length, the message, gzipped when the flag says so). */
function unframe(data: Buffer): Buffer | undefined {
  if (data.length < 5) return undefined;
  const length = data.readUInt32BE(1);
  if (data.length !== 5 + length) return undefined;
  const message = data.subarray(5);
  return data[0] === 1 ? gunzipSync(message) : message;
}

function frame(message: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}
