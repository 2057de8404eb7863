/**
 * What a worker restart needs on the time-skipping test server.
 *
 * A worker with a cache asks the server to send each workflow's next task to
 * a sticky queue of its own. A real server moves those tasks back to the
 * normal queue when the worker says it shuts down, or after a few seconds;
 * the test server does neither (it has no sticky timeout, and no
 * ShutdownWorker or ResetStickyTaskQueue), so after a restart every workflow
 * would wait forever on the dead worker's queue. The SDK names that queue
 * itself, at random.
 *
 * So the lane's worker reaches the server through `StickyQueueSpy`, a gRPC
 * pass-through that notes the sticky queues workers poll, and after a
 * restart `StickyQueueDrain` polls the dead worker's queues and hands each
 * task it finds back with the cause a worker gives when the task's workflow
 * is not in its cache (RESET_STICKY_TASK_QUEUE): the server then schedules
 * the task again on the normal queue, where the new worker, whose cache is
 * empty, replays the history from the start. That is what a restart does to
 * a workflow, plus one WORKFLOW_TASK_FAILED event of that cause in history
 * (the checks do not count it as a failure).
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { HINTED_PATHS, POLL_WORKFLOW_TASK_PATH, WORKFLOW_TASK_COMPLETED_PATH, type ServerHints } from './server-hints.js';

const { PollWorkflowTaskQueueRequest } = proto.temporal.api.workflowservice.v1;
const { QueryResultType, TaskQueueKind, WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;
/** Why a query sent to a restarted worker's queue failed: the test server's limit, not the workflow's. */
export const QUERY_LOST_IN_RESTART = 'explorer: the query went to the queue of a worker that was restarted';
const POLL_PATH = POLL_WORKFLOW_TASK_PATH;
const COMPLETE_PATH = WORKFLOW_TASK_COMPLETED_PATH;

/**
 * The test server's answer to a workflow task completion that cancels a timer which fired while the task ran
 * (temporalio/sdk-java#2606, open; fix proposed in #3060): it refuses the completion after marking the task done,
 * so the workflow never gets another task. A real server records the cancellation.
 */
export const TEST_SERVER_TIMER_RACE = 'invalid history builder state for action';

/**
 * The test server's answer (NOT_FOUND) to a workflow task completion that continues the run as new while a request
 * with no event of its own waits for the task's end (a query, say): it starts the new run, then counts the old one
 * as open, schedules it a task for the request, fails on its closed history, and drops the rest of the completion's
 * commit, the release of the task's lock on its clock among it. So each such answer leaves the clock locked once more,
 * and the waiting query is never sent to a worker (explore/queries.ts). A real server answers it from the closed run.
 */
export const TEST_SERVER_CLOSED_RUN = 'workflow execution already completed';

/**
 * A gRPC pass-through (HTTP/2, plain text) that records the sticky queues polled through it, and gives the worker the
 * server's hints (explore/server-hints.ts) in the tasks it forwards.
 */
export class StickyQueueSpy {
  readonly address: string;
  /** Every sticky queue a worker has polled through this spy. */
  readonly stickyQueues = new Set<string>();
  /** How many workflow task completions the server refused with TEST_SERVER_TIMER_RACE. */
  refusedCompletions = 0;
  /** How many workflow task completions the server refused with TEST_SERVER_CLOSED_RUN: each left its clock locked. */
  refusedAsClosed = 0;
  readonly #server: http2.Http2Server;
  readonly #upstream: http2.ClientHttp2Session;

  private constructor(
    server: http2.Http2Server,
    upstream: http2.ClientHttp2Session,
    readonly hints: ServerHints,
  ) {
    this.#server = server;
    this.#upstream = upstream;
    this.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(upstreamAddress: string, hints: ServerHints): Promise<StickyQueueSpy> {
    const upstream = http2.connect(`http://${upstreamAddress}`);
    upstream.on('error', () => {}); // each stream reports its own errors
    const server = http2.createServer();
    const spy: { on?: (queue: string) => void; refused?: (message: string) => void } = {};
    server.on('stream', (stream, headers) =>
      forward(
        stream,
        headers,
        upstream,
        (queue) => spy.on?.(queue),
        (message) => spy.refused?.(message),
        hints,
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const started = new StickyQueueSpy(server, upstream, hints);
    spy.on = (queue) => started.stickyQueues.add(queue);
    spy.refused = (message) => {
      if (message.includes(TEST_SERVER_TIMER_RACE)) started.refusedCompletions++;
      else if (message.includes(TEST_SERVER_CLOSED_RUN)) started.refusedAsClosed++;
    };
    return started;
  }

  async close(): Promise<void> {
    this.#upstream.close();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Forwards one call upstream and its answer back, noting the queue of a sticky workflow-task poll. */
function forward(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  upstream: http2.ClientHttp2Session,
  onSticky: (queue: string) => void,
  onRefusedCompletion: (message: string) => void,
  hints: ServerHints,
): void {
  const path = String(headers[':path']);
  const outgoing: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': path };
  for (const [name, value] of Object.entries(headers)) if (!name.startsWith(':') && value !== undefined) outgoing[name] = value;
  let call: http2.ClientHttp2Stream;
  try {
    call = upstream.request(outgoing);
  } catch {
    stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    return;
  }
  const body: Buffer[] = [];
  // An answer that may carry workflow tasks is held whole, and forwarded with the hints set when they are on as it
  // arrives. Deciding when the call starts would let a long poll begun between schedules (hints off) show the worker a
  // task of a hinted schedule unread: the hint would then count from a task the worker was shown without it, and the
  // replay would meet the flag where the worker did not.
  const hinted = HINTED_PATHS.has(path);
  const answer: Buffer[] = [];
  const inspect = path === POLL_PATH || hinted;
  stream.on('data', (chunk: Buffer) => {
    if (inspect) body.push(chunk);
    call.write(chunk);
  });
  stream.on('end', () => {
    call.end();
    if (path === POLL_PATH) {
      const queue = stickyQueueOf(Buffer.concat(body));
      if (queue) onSticky(queue);
    }
    if (hinted && hints.enabled && path === COMPLETE_PATH) {
      try {
        hints.noteCompletion(Buffer.concat(body));
      } catch {
        // Not a completion the hints can read: nothing to note.
      }
    }
  });
  // The worker gave up (a long poll at shutdown): so does the upstream call.
  stream.on('close', () => {
    if (!call.closed) call.close(http2.constants.NGHTTP2_CANCEL);
  });
  stream.on('error', () => {});
  call.on('error', () => {
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  });

  let trailers: http2.IncomingHttpHeaders = {};
  const noteRefusal = (h: http2.IncomingHttpHeaders) => {
    const status = String(h['grpc-status']);
    if (path !== COMPLETE_PATH || (status !== '3' && status !== '5')) return;
    onRefusedCompletion(decodeURIComponent(String(h['grpc-message'] ?? '')));
  };
  call.on('response', (response) => {
    noteRefusal(response);
    if (stream.closed) return;
    const headers: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(response)) if (value !== undefined) headers[name] = value;
    // A hinted answer may change its length.
    if (hinted) delete headers['content-length'];
    // A trailers-only answer (an error) ends here; otherwise the body and the trailers follow.
    if (response['grpc-status'] !== undefined) stream.respond(headers, { endStream: true });
    else stream.respond(headers, { waitForTrailers: true });
  });
  stream.on('wantTrailers', () => {
    const out: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(trailers)) if (!name.startsWith(':') && value !== undefined) out[name] = value;
    stream.sendTrailers(Object.keys(out).length > 0 ? out : { 'grpc-status': '0' });
  });
  call.on('trailers', (t: http2.IncomingHttpHeaders) => {
    trailers = t;
    noteRefusal(t);
  });
  call.on('data', (chunk: Buffer) => {
    if (hinted) answer.push(chunk);
    else if (!stream.closed && !stream.destroyed) stream.write(chunk);
  });
  call.on('end', () => {
    if (stream.closed || stream.destroyed || !stream.headersSent || stream.writableEnded) return;
    if (hinted && answer.length > 0) {
      let out: Buffer = Buffer.concat(answer);
      try {
        if (hints.enabled) out = hints.patchResponse(path, Buffer.concat(body), out);
      } catch {
        // Not a message the hints can read: forwarded as it came.
      }
      stream.write(out);
    }
    stream.end();
  });
}

/** The sticky queue a `PollWorkflowTaskQueue` request names (gRPC framing: a flag byte, a length, the message). */
function stickyQueueOf(frame: Buffer): string | undefined {
  if (frame.length < 5) return undefined;
  const length = frame.readUInt32BE(1);
  let message = frame.subarray(5, 5 + length);
  if (frame[0] === 1) message = gunzipSync(message);
  const request = PollWorkflowTaskQueueRequest.decode(message);
  return request.taskQueue?.kind === TaskQueueKind.TASK_QUEUE_KIND_STICKY ? (request.taskQueue.name ?? undefined) : undefined;
}

/**
 * Polls the sticky queues of workers that are gone and hands every task back (RESET_STICKY_TASK_QUEUE), so the
 * server schedules it on the normal queue, until stopped.
 */
export class StickyQueueDrain {
  readonly #client: Client;
  readonly #normalQueue: string;
  readonly #abort = new AbortController();
  readonly #loops: Promise<void>[] = [];
  /** Tasks handed back. */
  handedBack = 0;
  /** The workflows whose task was handed back, in order. */
  readonly moved: string[] = [];

  constructor(client: Client, normalQueue: string) {
    this.#client = client;
    this.#normalQueue = normalQueue;
  }

  drain(stickyQueue: string): void {
    this.#loops.push(this.#loop(stickyQueue));
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#loops);
  }

  async #loop(name: string): Promise<void> {
    const namespace = this.#client.options.namespace;
    const service = this.#client.workflowService;
    while (!this.#abort.signal.aborted) {
      try {
        const task = await this.#client.withAbortSignal(this.#abort.signal, () =>
          service.pollWorkflowTaskQueue({
            namespace,
            taskQueue: { name, kind: TaskQueueKind.TASK_QUEUE_KIND_STICKY, normalName: this.#normalQueue },
            identity: 'explorer: a restarted worker',
          }),
        );
        if (!task.taskToken || task.taskToken.length === 0) continue;
        if (task.query) {
          // A query sent to the dead worker: the test server cannot move it to the normal queue, so it fails, and
          // the driver treats the failure as the restart's (explore/driver.ts). The next workflow task moves on.
          await service.respondQueryTaskCompleted({
            namespace,
            taskToken: task.taskToken,
            completedType: QueryResultType.QUERY_RESULT_TYPE_FAILED,
            errorMessage: QUERY_LOST_IN_RESTART,
          });
          continue;
        }
        await service.respondWorkflowTaskFailed({
          namespace,
          taskToken: task.taskToken,
          cause: WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
          identity: 'explorer: a restarted worker',
        });
        this.handedBack++;
        if (task.workflowExecution?.workflowId) this.moved.push(task.workflowExecution.workflowId);
      } catch {
        if (this.#abort.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
}
