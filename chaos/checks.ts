// What a chaos run must prove: nothing lost, nothing duplicated, nothing
// nondeterministic. Every check reads the real sources of truth: workflow
// results and histories in Temporal, the archive directory, and the provider.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { EsignClient } from '../src/esign/client.js';
import { hashFile, hashStream } from '../src/util/streams.js';
import type { SandboxControlClient } from '../src/client/sandbox-control.js';
import type { ArchiveManifest } from '../src/archive/store.js';
import { esignCompletedSignal, esignEventSignal, workflowIdFor, type EsignTransactionResult } from '../src/definitions/transaction.js';
import type { ChaosReceiver } from './receiver.js';
import type { Scenario } from './schedule.js';
import { inboxIdFor, inboxNotificationSignal } from '../src/definitions/inbox.js';
import { eventLogIdFor, eventLogQuery } from '../src/definitions/event-log.js';
import { checkVersions, runsOf, type Run, type VersionCounts } from './versions.js';
import type { RollingDeploy } from './workers.js';

export interface ChaosChecks {
  /** Empty when the run is clean; each entry names the transaction and what went wrong. */
  problems: string[];
  completed: number;
  /** How many ended each way (completed, declined, cancelled, expired, deleted). */
  outcomes: Record<string, number>;
  archives: number;
  providerTransactions: number;
  completedBy: { webhook: number; reconciliation: number };
  webhooks: { delivered: number; dropped: number; failed: number; pending: number; ackedAndFoundInTemporal: number; ackedStale: number };
  /** Attempts beyond the first, by activity: faults the workflows absorbed. */
  activityRetries: Record<string, number>;
  /** Partial downloads left behind by killed workers (scratch files, never archives). */
  stagingLeftovers: number;
  /** Events to the integrator's callback: distinct, attempts, and attempts whose signature did not verify. */
  integratorEvents: { distinct: number; attempts: number; unverified: number };
  /** Where the transactions ran, when the run had a rolling deploy (./versions.ts). */
  versions?: VersionCounts;
}

interface CheckInput {
  client: Client;
  provider: EsignClient;
  control: SandboxControlClient;
  archiveDir: string;
  results: Map<string, EsignTransactionResult | Error>;
  /** What the driver did to each transaction (run-chaos.ts), so its outcome can be held against it. */
  planned: Map<string, Scenario>;
  receiver: ChaosReceiver;
  /** How many participants a transaction has, by referenceId. */
  participants: (referenceId: string) => number;
  /** The run's referenceIds start with one of these (the driven transactions', the batch's rows'). */
  referencePrefixes: string[];
  deploy?: RollingDeploy;
}

/** The outcomes each scenario may end in; the provider's final state decides which is right. */
const EXPECTED: Record<Scenario, readonly string[]> = {
  sign: ['completed'],
  decline: ['declined'],
  'provider-cancel': ['cancelled'],
  'provider-expire': ['expired'],
  'provider-delete': ['deleted'],
  'deadline-race': ['completed', 'expired'],
};

/** The provider's final status each outcome must meet: an expiry we reported withdrew the transaction to a draft. */
const PROVIDER_STATE_OF: Record<string, readonly string[]> = {
  completed: ['completed'],
  declined: ['declined'],
  cancelled: ['cancelled', 'draft'],
  expired: ['expired', 'draft'],
  deleted: ['deleted'],
};

const { WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** The signals through which the inbox hands a provider notification to its transaction. */
const NOTIFICATION_SIGNALS = new Set([esignCompletedSignal.name, esignEventSignal.name]);

export async function checkRun({
  client,
  provider,
  control,
  archiveDir,
  results,
  planned,
  receiver,
  participants,
  referencePrefixes,
  deploy,
}: CheckInput): Promise<ChaosChecks> {
  const problems: string[] = [];
  const checks: ChaosChecks = {
    problems,
    completed: 0,
    outcomes: {},
    archives: 0,
    providerTransactions: 0,
    completedBy: { webhook: 0, reconciliation: 0 },
    webhooks: { delivered: 0, dropped: 0, failed: 0, pending: 0, ackedAndFoundInTemporal: 0, ackedStale: 0 },
    activityRetries: {},
    stagingLeftovers: 0,
    integratorEvents: { distinct: receiver.events.size, attempts: receiver.attempts, unverified: receiver.unverified },
  };
  if (receiver.unverified > 0) problems.push(`${receiver.unverified} callback attempts did not verify`);

  // The logs deliver after their transactions returned (a worker or matching killed at the end delays them): the
  // receiver is read once every log has settled, or its wait ran out and the check below says what is missing.
  await waitForEventLogs(
    client,
    [...results.values()].filter((r): r is EsignTransactionResult => !(r instanceof Error)),
  );

  // 1. Every transaction ended in exactly one outcome: the one its scenario allows, matching the provider's final state.
  const completed: EsignTransactionResult[] = [];
  const ended: EsignTransactionResult[] = [];
  for (const [referenceId, result] of results) {
    if (result instanceof Error) {
      problems.push(`${referenceId}: ${result.message}`);
      continue;
    }
    checks.outcomes[result.status] = (checks.outcomes[result.status] ?? 0) + 1;
    const scenario = planned.get(referenceId)!;
    if (!EXPECTED[scenario].includes(result.status))
      problems.push(`${referenceId}: ${scenario} ended ${result.status} (${result.reason ?? 'no reason'})`);
    if (!result.transactionId) {
      problems.push(`${referenceId}: ended ${result.status} without a provider transaction`);
      continue;
    }
    ended.push(result);
    // The integrator heard the end exactly once (in effect), and each signature once when it completed.
    const heard = receiver.of(referenceId);
    const ends = heard.filter((e) => e.type.startsWith('transaction.'));
    if (ends.length !== 1 || ends[0]!.type !== `transaction.${result.status}`)
      problems.push(`${referenceId}: the integrator heard ${ends.map((e) => e.type).join(', ') || 'no end'} for ${result.status}`);
    const signed = new Set(heard.filter((e) => e.type === 'participant.signed').map((e) => e.participantId));
    if (result.status === 'completed' && signed.size !== participants(referenceId))
      problems.push(`${referenceId}: the integrator heard ${signed.size} of ${participants(referenceId)} signatures`);
    const providerStatus = (await provider.getTransaction(result.transactionId)).status;
    if (!PROVIDER_STATE_OF[result.status]?.includes(providerStatus))
      problems.push(`${referenceId}: the workflow says ${result.status}, the provider says ${providerStatus}`);
    if (providerStatus === 'completed') {
      if (result.status !== 'completed' || !result.archive)
        problems.push(`${referenceId}: completed at the provider but not archived by its workflow`);
      else completed.push(result);
    }
  }
  checks.completed = completed.length;

  // 2. Exactly one archive per transaction the provider completed, byte-identical to its ZIP; none for any other.
  const entries = await readdir(archiveDir).catch(() => [] as string[]);
  const archived = new Set(entries.filter((e) => e !== '.staging'));
  checks.archives = archived.size;
  checks.stagingLeftovers = (await readdir(join(archiveDir, '.staging')).catch(() => [] as string[])).length;
  const expected = new Set(completed.map((r) => r.transactionId!));
  for (const extra of [...archived].filter((k) => !expected.has(k))) problems.push(`archive ${extra} belongs to no completed transaction`);
  for (const r of completed) {
    const dir = join(archiveDir, r.transactionId!);
    if (!archived.has(r.transactionId!)) {
      problems.push(`${r.referenceId}: no archive at ${dir}`);
      continue;
    }
    const onDisk = await hashFile(join(dir, 'completed.zip'));
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as ArchiveManifest;
    const fromProvider = await hashStream((await provider.downloadCompletedDocuments(r.transactionId!)).body);
    if (onDisk.sha256 !== fromProvider.sha256)
      problems.push(`${r.referenceId}: archived ZIP ${onDisk.sha256} differs from the provider's ${fromProvider.sha256}`);
    if (manifest.zip.sha256 !== onDisk.sha256 || r.archive!.sha256 !== onDisk.sha256)
      problems.push(`${r.referenceId}: manifest or result hash does not match the archived file`);
    if (manifest.referenceId !== r.referenceId) problems.push(`${r.referenceId}: archive manifest names ${manifest.referenceId}`);
  }

  // 3. The provider holds exactly one transaction per referenceId.
  const perReference = new Map<string, number>();
  for (let offset = 0; ; offset += 500) {
    const page = await provider.listTransactions({ limit: 500, offset });
    for (const { referenceId: ref } of page.data) {
      if (!ref || !referencePrefixes.some((p) => ref.startsWith(p))) continue;
      perReference.set(ref, (perReference.get(ref) ?? 0) + 1);
    }
    if (offset + page.data.length >= page.total || page.data.length === 0) break;
  }
  checks.providerTransactions = [...perReference.values()].reduce((a, b) => a + b, 0);
  for (const referenceId of results.keys()) {
    const n = perReference.get(referenceId) ?? 0;
    if (n !== 1) problems.push(`${referenceId}: the provider holds ${n} transactions for it`);
  }

  // 4. Histories: no failed workflow task (nondeterminism or a bug), no non-retryable activity failure;
  //    and every webhook the bridge acknowledged is a signal in the transaction's workflow or its inbox.
  await waitForWebhookOutbox(control, ended);
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  const decode = async (payloads: Payload[]): Promise<unknown[]> => {
    let decoded = payloads;
    for (const codec of [...payloadCodecs].reverse()) decoded = await codec.decode(decoded);
    return decoded.map((p) => payloadConverter.fromPayload(p));
  };
  const chains = new Map<string, Run[]>();
  for (const r of ended) {
    const deliveries = await control.deliveries({ transactionId: r.transactionId! });
    for (const d of deliveries) checks.webhooks[d.status]++;
    const acked = new Set(deliveries.filter((d) => d.status === 'delivered').map((d) => d.notificationId));

    // Every run of the transaction, those before a continue-as-new included.
    const transactionId = workflowIdFor(r.referenceId);
    const runs = await runsOf(client, transactionId);
    chains.set(r.referenceId, runs);
    if (runs.length === 0) problems.push(`${transactionId}: no history`);
    if (r.status === 'completed') {
      // Read from the histories rather than asked of the workflow: a query needs a worker of the run's version,
      // and a transaction that ended on a version since retired has none.
      const notified = runs.some((run) =>
        run.events.some((e) => NOTIFICATION_SIGNALS.has(e.workflowExecutionSignaledEventAttributes?.signalName ?? '')),
      );
      if (notified) checks.completedBy.webhook++;
      else checks.completedBy.reconciliation++;
    }
    // A webhook reaches the transaction's own workflow (a signal in one of its runs) or, for a completion nobody
    // waited for, its inbox. Another event after the end is acknowledged as stale and signals nothing.
    const inboxId = inboxIdFor(r.transactionId!);
    const inbox = await client.workflow
      .getHandle(inboxId)
      .fetchHistory()
      .catch(() => undefined);
    const histories = [
      ...runs.map((run) => ({ workflowId: transactionId, events: run.events })),
      ...(inbox ? [{ workflowId: inboxId, events: inbox.events ?? [] }] : []),
    ];
    const carried = new Set([inboxNotificationSignal.name, ...NOTIFICATION_SIGNALS]);
    for (const { workflowId, events } of histories) {
      checkHistory(workflowId, events, checks.activityRetries, problems);
      for (const e of events) {
        const signaled = e.workflowExecutionSignaledEventAttributes;
        if (signaled?.signalName && carried.has(signaled.signalName)) {
          const [notification] = (await decode(signaled.input?.payloads ?? [])) as { data?: { notificationId?: string } }[];
          const notificationId = notification?.data?.notificationId;
          if (notificationId && acked.has(notificationId)) {
            acked.delete(notificationId);
            checks.webhooks.ackedAndFoundInTemporal++;
          }
        }
      }
    }
    const closedAt = endTime(runs.at(-1)?.events ?? []);
    for (const lost of acked) {
      const d = deliveries.find((x) => x.notificationId === lost)!;
      const event = (JSON.parse(d.payload) as { event?: string }).event;
      if (event !== 'esign-completed' && closedAt !== undefined && (d.deliveredAt ?? 0) >= closedAt) checks.webhooks.ackedStale++;
      else problems.push(`${r.referenceId}: webhook ${lost} (${event}) was acknowledged by the bridge but is in no history`);
    }
  }
  if (deploy) checks.versions = checkVersions(deploy, chains, problems);
  return checks;
}

/**
 * Adds to `problems` a history's failed workflow tasks and non-retryable activity failures, and to `retries` the
 * attempts beyond the first of each activity type.
 */
export function checkHistory(workflowId: string, events: HistoryEvent[], retries: Record<string, number>, problems: string[]): void {
  const activityTypes = new Map<string, string>();
  for (const e of events) {
    const id = String(e.eventId);
    if (e.activityTaskScheduledEventAttributes) activityTypes.set(id, e.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
    const startedAttempt = e.activityTaskStartedEventAttributes?.attempt ?? 1;
    if (startedAttempt > 1) {
      const type = activityTypes.get(String(e.activityTaskStartedEventAttributes!.scheduledEventId)) ?? '?';
      retries[type] = (retries[type] ?? 0) + startedAttempt - 1;
    }
    const wtf = e.workflowTaskFailedEventAttributes;
    // UNHANDLED_COMMAND is the server refusing a completion because a signal arrived during the task; the SDK
    // replays the task with the signal, so it is how Temporal works, not a fault of ours.
    if (wtf && wtf.cause !== WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND)
      problems.push(`${workflowId}: workflow task failed (${WorkflowTaskFailedCause[wtf.cause ?? 0]}): ${wtf.failure?.message ?? ''}`);
    const failed = e.activityTaskFailedEventAttributes?.failure;
    if (failed?.applicationFailureInfo?.nonRetryable)
      problems.push(`${workflowId}: non-retryable activity failure: ${failed.message ?? ''}`);
  }
}

/** Gives the sandbox's outbox a moment to finish retries still under way (its backoff may have grown during an outage). */
async function waitForWebhookOutbox(control: SandboxControlClient, completed: EsignTransactionResult[], timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (const r of completed) {
    await settleBy(until, async () => !(await control.deliveries({ transactionId: r.transactionId! })).some((d) => d.status === 'pending'));
  }
}

/**
 * Waits until each transaction's event log holds its end and has nothing pending. Asked of the log itself (it
 * auto-upgrades, so a worker of the current version answers); a query that fails while a service is still coming
 * back is asked again.
 */
async function waitForEventLogs(client: Client, ended: EsignTransactionResult[], timeoutMs = 120_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (const r of ended) {
    const handle = client.workflow.getHandle(eventLogIdFor(r.referenceId));
    await settleBy(until, async () => {
      const view = await handle.query(eventLogQuery).catch(() => undefined);
      return view?.ended === true && !view.events.some((e) => e.state === 'pending');
    });
  }
}

/**
 * Asks `settled` every half second until it holds or `until` (epoch ms) passes. Never throws for time: a wait
 * that runs out leaves the check after it to fail with what is missing, which says more than a timeout.
 */
async function settleBy(until: number, settled: () => Promise<boolean>): Promise<void> {
  while (!(await settled()) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 500));
}

/** When a run closed (its last event's time, in ms), if it has. */
function endTime(events: HistoryEvent[]): number | undefined {
  const last = events.at(-1);
  if (!last?.workflowExecutionCompletedEventAttributes && !last?.workflowExecutionFailedEventAttributes) return undefined;
  const t = last.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : undefined;
}
