/**
 * The worker's activities for exploration: everything the workflows call,
 * in process, against the provider model. Shared by the explorer and the fast
 * branching tests (test/workflows/workflow-branching.test.ts).
 *
 * As much real code as can run without I/O runs: input validation, the
 * transaction activities (the create's lookup after a lost response, the
 * withdraw's reading of a 409) over a client backed by the model, and the
 * inbox activities, which start the inbox and late-completion workflows on the
 * same server. Upload, archive and the integrator's events are stubs that
 * keep the real contracts (idempotent archive commit, ArchiveInvalid for a
 * ZIP the archive refuses) and record what they did in the model. The evidence
 * upkeep lists the model's archives with the real activity and renews them in a
 * model of its own (explore/upkeep.ts).
 *
 * Faults are planned, not drawn: the plan names the n-th call of an activity
 * and whether it fails before its effect or after it (the response is lost,
 * which is what a timeout looks like to the workflow). Either way Temporal
 * retries it. A plan keyed by call counts keeps a schedule reproducible and
 * lets the shrinker drop faults one by one.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { createBulkActivities } from '../activities/bulk.js';
import { createInboxActivities } from '../activities/inbox.js';
import type { EsignActivities } from '../activities/index.js';
import { createInputValidationActivities } from '../activities/input-validation.js';
import { createTransactionActivities } from '../activities/transactions.js';
import type { ArchiveInput } from '../activities/archive.js';
import { createCompletionActivities, DEFAULT_CALLBACK_DELIVERY } from '../activities/completion.js';
import type { UploadDocumentsInput, UploadDocumentsResult } from '../activities/documents.js';
import type { EsignClient } from '../src/esign/client.js';
import { FailureType } from '../src/failures.js';
import { UrlPolicy } from '../activities/support/url-policy.js';
import type { ArchiveResult, EsignTransactionResult, IntegratorEvent } from '../src/definitions/transaction.js';
import type { ModelOperation, ProviderModel } from './provider-model.js';
import { EsignApiError } from '../src/esign/errors.js';
import { createBulkExplorerActivities, type BulkActivityOptions } from './bulk.js';
import { UpkeepModel } from './upkeep.js';
import type { RecordsModel } from './records.js';

/** Where the explorer's transactions send their integrator events (never contacted: the stubs record them). */
export const CALLBACK_URL = 'https://integrator.invalid/esign-events';

export interface PlannedFault {
  activity: keyof EsignActivities;
  /** 1-based: the n-th call of this activity in the run (every attempt counts). */
  call: number;
  /**
   * `before`: fails without effect; `after`: the effect happened and the response was lost (both retried);
   * `reject`: the provider's final answer, a 422, before any effect (not retried); `late`: the attempt's first write
   * to the provider gets no answer (a timeout, retried) and its effect reaches the provider later (`landsAfter`);
   * `slow`: the attempt takes `takesMs` before its effect (`slowAt: 'before'`: a request slow to be taken) or between
   * its effect and its answer (`'after'`), while the world and the messages move on.
   */
  when: 'before' | 'after' | 'reject' | 'late' | 'slow';
  /**
   * `late`: the effect lands before the n-th provider call after the give-up (1: before the very next), or when the
   * client's give-up bound (`EXPLORER_ABANDONS_AFTER_MS`, in real time) runs out, whichever comes first.
   */
  landsAfter?: number;
  /**
   * `slow`: how long the attempt takes, in real time, which is the test server's too (it holds its clock while an
   * activity is outstanding): a few seconds, within every heartbeat and start-to-close timeout.
   */
  takesMs?: number;
  slowAt?: 'before' | 'after';
}

/**
 * The provider call a `reject` fault refuses, for the activities that call the provider model: the activity's own code
 * then reads the 422. Other activities' refusal is their failure, at once.
 */
const REJECTED_CALL: Partial<Record<keyof EsignActivities, ModelOperation>> = {
  createTransaction: 'createTransaction',
  getTransactionStatus: 'getTransaction',
  describeTransaction: 'getTransaction',
  updateTransaction: 'updateTransaction',
  withdrawTransaction: 'updateTransaction',
  createSigningUrl: 'createIframeUrl',
};

/** The activities whose first write to the provider a `late` fault can hold back (an upload has no provider model). */
export const LATE_WRITES: readonly PlannedFault['activity'][] = ['createTransaction', 'updateTransaction', 'withdrawTransaction'];

/**
 * The model client's give-up bound (EsignClient `abandonsAfterMs`), in real time: a write given up on lands within it,
 * and the activities wait past it (a create's retry, a withdraw after a retried replace). Real time because the
 * activities' clock is the machine's, while the workflows' is the test server's; short, so those waits stay short.
 */
export const EXPLORER_ABANDONS_AFTER_MS = 300;
/** How far within its bound a late write lands at the latest: more than a timer's lateness on a busy machine. */
const LATE_LANDING_MARGIN_MS = 60;

/** The activities whose calls the explorer may fail: input validation is pure and never fails for transport reasons. */
export const FAULTABLE: readonly (keyof EsignActivities)[] = [
  'uploadDocuments',
  'createTransaction',
  'getTransactionStatus',
  'updateTransaction',
  'withdrawTransaction',
  'createSigningUrl',
  'archiveCompletedDocuments',
  'attemptLoggedEvent',
  'recordCompletion',
  'describeTransaction',
  'startLateCompletion',
];

/** The explorer's worker tries an event three times, 2 s apart and doubling, before the log marks it failed. */
export const EXPLORER_CALLBACK_DELIVERY = { ...DEFAULT_CALLBACK_DELIVERY, attempts: 3, firstDelayMs: 2_000, maxDelayMs: 60_000 };

/** The activity attempt a call is made in (a `late` fault names one). */
function attemptKey(): string {
  const { workflowExecution, activityId, attempt } = Context.current().info;
  return `${workflowExecution?.workflowId}/${workflowExecution?.runId}/${activityId}/${attempt}`;
}

/** A client with the shape of EsignClient whose provider is the model (the transaction activities take the class). */
export function modelClient(model: ProviderModel): EsignClient {
  /** One call: it arrives (what was given up on may land first), is refused if its endpoint is down, else takes effect. */
  const call = async <T>(operation: ModelOperation, effect: () => T, write = false): Promise<T> => {
    model.arrive();
    model.refuse(operation);
    // A `reject` fault: the provider's final answer to this attempt's call, before any effect.
    const attempt = model.rejects.size > 0 ? attemptKey() : undefined;
    if (attempt !== undefined && model.rejects.get(attempt) === operation) {
      model.rejects.delete(attempt);
      throw new EsignApiError({ kind: 'http', status: 422, operation, message: 'explorer: the provider answered 422' });
    }
    const key = write ? attemptKey() : undefined;
    const landsAfter = key === undefined ? undefined : model.lateWrites.get(key);
    if (key === undefined || landsAfter === undefined) return effect();
    // A `late` fault: no answer comes, and the client gives up on it a bound later; the effect reaches the provider
    // later, up to the two bounds after it was sent that a retry must wait past. Counted from the send, and a little
    // within (timers fire late, and the explorer's workers keep no margin for clocks), so that it never lands past
    // the bound the production code is entitled to count on.
    const sentAt = Date.now();
    model.lateWrites.delete(key);
    const pending = { what: `${operation} of ${key}`, callsLeft: landsAfter, land: () => void effect() };
    model.pendingEffects.push(pending);
    await new Promise((resolve) => setTimeout(resolve, EXPLORER_ABANDONS_AFTER_MS));
    const landBy = sentAt + 2 * EXPLORER_ABANDONS_AFTER_MS - LATE_LANDING_MARGIN_MS;
    setTimeout(() => model.landLate(pending), Math.max(0, landBy - Date.now())).unref();
    throw new EsignApiError({ kind: 'timeout', operation, message: 'explorer: no answer came; the request reaches the provider later' });
  };
  const client = {
    abandonsAfterMs: EXPLORER_ABANDONS_AFTER_MS,
    async createTransaction(request: Parameters<EsignClient['createTransaction']>[0]) {
      return call('createTransaction', () => model.create(request), true);
    },
    async getTransaction(id: string) {
      return call('getTransaction', () => model.get(id));
    },
    async updateTransaction(id: string, request: Parameters<EsignClient['updateTransaction']>[1]) {
      // The withdraw is the replace to draft; the activities tell it apart only by the status they ask for.
      const by = request.status === 'draft' ? 'withdraw or replace to draft' : 'replace to esign_pending';
      return call('updateTransaction', () => model.replace(id, request, by), true);
    },
    async listTransactions(query: Parameters<EsignClient['listTransactions']>[0] = {}) {
      return call('listTransactions', () => model.list(Number(query.limit ?? 50), Number(query.offset ?? 0)));
    },
    async answersItsList() {
      await call('listTransactions', () => undefined);
    },
    async createIframeUrl(request: Parameters<EsignClient['createIframeUrl']>[0]) {
      return call('createIframeUrl', () => model.signingUrl(request.data.esignId, request.data.participantIds));
    },
  };
  // Only the methods the transaction activities call exist; the class's private fields make a structural type impossible.
  return client as unknown as EsignClient;
}

export interface ExplorerActivityOptions {
  model: ProviderModel;
  faults?: readonly PlannedFault[];
  /** A `bulk` schedule's store, task queue and crashes (explore/bulk.ts); without it the bulk activities refuse to run. */
  bulk?: BulkActivityOptions;
  /** The archive as the evidence upkeep walks it (explore/upkeep.ts); one over `model`'s archives by default. */
  upkeep?: UpkeepModel;
  /** A schedule's records (explore/records.ts): its retention walks and holds register; without it they refuse to run. */
  records?: RecordsModel;
}

/** Every activity of the workflows, over the model, with the planned faults. */
export function createExplorerActivities(options: ExplorerActivityOptions): EsignActivities {
  const { model } = options;
  const real = {
    ...createInputValidationActivities({
      urlPolicy: new UrlPolicy([new URL(CALLBACK_URL).origin]),
      minReconcileMs: 1_000,
      canSignCallbacks: true,
      // The model's documents are the caller's uploads without hashes; the archive is the model's, not the evidence check.
      requireUploadHashes: false,
    }),
    // One machine: no margin for two workers' clocks (activities/support/write-attempts.ts).
    ...createTransactionActivities({ client: modelClient(model), clockSkewMs: 0 }),
    ...createInboxActivities(),
    // The walk's listing over the model's archive keys, and a model of the renewal (explore/upkeep.ts).
    ...(options.upkeep ?? new UpkeepModel(model)).activities(),
    ...(options.bulk ? createBulkExplorerActivities(options.bulk) : createBulkActivities({ taskQueue: 'explorer-has-no-bulk-send' })),
    // The records retention and the holds register run only in the schedules that draw them: a purge or a hold's
    // application elsewhere is a defect of the explorer.
    ...(options.records?.activities() ?? {
      purgeIfDue: () => Promise.reject(new Error('this schedule runs no records retention')),
      applyLegalHolds: () => Promise.reject(new Error('this schedule runs no legal holds register')),
    }),
  };
  const lateEvents = createCompletionActivities({ urlPolicy: new UrlPolicy([new URL(CALLBACK_URL).origin]) });
  const activities: EsignActivities = {
    ...real,

    async uploadDocuments(input: UploadDocumentsInput): Promise<UploadDocumentsResult> {
      const storagePaths = model.upload(input.documents.length);
      return { storagePaths, sha256: Object.fromEntries(storagePaths.map((p, i) => [p, String(i).padStart(64, '0')])) };
    },

    /** The real archive's contract: an archive committed for the key is returned as it is; a refused ZIP is ArchiveInvalid. */
    async archiveCompletedDocuments(input: ArchiveInput): Promise<ArchiveResult> {
      const key = input.archivePrefix ? `${input.archivePrefix}/${input.transactionId}` : input.transactionId;
      const archived = (sha256: string): ArchiveResult => ({ uri: `model://archive/${key}`, sha256, bytes: 1, files: [] });
      const committed = model.archives.find((a) => a.key === key);
      if (committed) {
        // A retry of an attempt that committed and then failed before the hold.
        await options.records?.holdIfCovered(key);
        return archived(committed.sha256);
      }
      let zip: { sha256: string; valid: boolean };
      try {
        zip = model.zip(input.transactionId);
      } catch (err) {
        // The real activity's download answers 409 the same way: not completed, nothing to archive.
        throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.ProviderRejected);
      }
      if (!zip.valid) {
        model.refusals.push(input.transactionId);
        throw ApplicationFailure.nonRetryable('completed ZIP rejected: explorer: the ZIP is invalid', FailureType.ArchiveInvalid);
      }
      model.archives.push({
        key,
        transactionId: input.transactionId,
        sha256: zip.sha256,
        ...(input.participantIds ? { participantIds: input.participantIds } : {}),
      });
      // Archived now on the server's clock (the attempt was scheduled in the schedule's time), then held if covered.
      options.records?.committed({ ...input, key, sha256: zip.sha256 }, Context.current().info.currentAttemptScheduledTimestampMs);
      await options.records?.holdIfCovered(key);
      return archived(zip.sha256);
    },

    // The real hand-over to the lane's event log: a late completion's event is numbered by the log.
    async appendToEventLog(input) {
      return lateEvents.appendToEventLog(input);
    },

    /**
     * The event log's delivery: the model's endpoint takes every event at its first attempt, unless the schedule
     * took it down (503, retried within a small budget, so an event is marked failed within seconds).
     */
    async attemptLoggedEvent(input: { callbackUrl: string; event: IntegratorEvent & { sequence: number } }) {
      const info = Context.current().info;
      const delivered = !model.endpointDown;
      model.deliveries.push({
        key: input.event.key,
        sequence: input.event.sequence,
        type: input.event.type,
        delivered,
        activity: `${info.workflowExecution?.runId ?? ''}/${info.activityId}`,
      });
      if (delivered) model.recordEvent('attemptLoggedEvent', input.event);
      return {
        attempt: { at: new Date().toISOString(), ms: 0, status: delivered ? 204 : 503 },
        outcome: delivered ? ('delivered' as const) : ('retry' as const),
        budget: EXPLORER_CALLBACK_DELIVERY,
      };
    },

    async recordCompletion(input: { result: EsignTransactionResult; callbackUrl?: string; late?: boolean }): Promise<void> {
      if (!input.callbackUrl) return;
      const type = input.late ? 'transaction.completed_late' : `transaction.${input.result.status}`;
      model.recordEvent('recordCompletion', {
        type: type as IntegratorEvent['type'],
        key: `${input.result.transactionId ?? input.result.referenceId}:${type}`,
        data: { ...input.result },
      });
    },
  };
  return withFaults(activities, options.faults ?? [], model);
}

/** Counts each activity's calls and fails the planned ones, before or after their effect, as retryable. */
function withFaults(activities: EsignActivities, plan: readonly PlannedFault[], model: ProviderModel): EsignActivities {
  if (plan.length === 0) return activities;
  const calls = new Map<string, number>();
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      const n = (calls.get(name) ?? 0) + 1;
      calls.set(name, n);
      const fault = plan.find((f) => f.activity === name && f.call === n);
      if (fault) model.faultsHit++;
      if (fault?.when === 'slow') model.slowCalls++;
      const fail = (what: string) =>
        ApplicationFailure.retryable(
          `explorer fault: ${name} call ${n} (attempt ${Context.current().info.attempt}) ${what}`,
          FailureType.ProviderUnavailable,
        );
      if (fault?.when === 'before') throw fail('failed before its effect');
      /** Runs the attempt with a fault armed at the model client for it (the activity's own code then meets it). */
      const armed = async <V>(faults: Map<string, V>, value: V) => {
        const key = attemptKey();
        faults.set(key, value);
        try {
          return await fn(...args);
        } finally {
          faults.delete(key);
        }
      };
      const rejected = REJECTED_CALL[name as keyof EsignActivities];
      // Refused at the provider, so the activity's own code reads the refusal (as it reads a real one).
      if (fault?.when === 'reject' && rejected) return armed(model.rejects, rejected);
      if (fault?.when === 'reject')
        throw ApplicationFailure.nonRetryable(`explorer fault: ${name} call ${n}: the provider answered 422`, FailureType.ProviderRejected);
      // The model client holds back this attempt's first write (an attempt that writes nothing is not affected).
      if (fault?.when === 'late') return armed(model.lateWrites, fault.landsAfter ?? 1);
      const slow = (at: 'before' | 'after') =>
        fault?.when === 'slow' && (fault.slowAt ?? 'before') === at
          ? new Promise((resolve) => setTimeout(resolve, fault.takesMs ?? 1_000))
          : undefined;
      await slow('before');
      const result = await fn(...args);
      await slow('after');
      if (fault?.when === 'after') throw fail('lost its response after its effect');
      return result;
    };
  }
  return wrapped as EsignActivities;
}
