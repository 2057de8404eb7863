/**
 * Erasure of a referenceId's personal data from Temporal's histories (GDPR Art. 17) by crypto-shredding: every
 * workflow that carried its payloads (the transactions, their event log, their inbox and late completions) wrote them
 * under a data key of its own workflow id (docs/codec.md); destroying those keys leaves the closed histories in
 * Temporal until the namespace retention removes them, unreadable by anyone. Refused while a legal hold covers the
 * referenceId or anything of it runs. The archive is kept: the law that sets its retention is the reason to keep it.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { ArchiveStore } from '../archive/store.js';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../codec/aes-gcm-codec.js';
import { DATA_KEY_PREFIX, type DataKeys } from '../codec/data-keys.js';
import { EVENT_LOG_WORKFLOW_TYPE, eventLogIdFor } from '../definitions/event-log.js';
import { INBOX_WORKFLOW_TYPE, inboxIdFor } from '../definitions/inbox.js';
import { LATE_COMPLETION_WORKFLOW_TYPE, lateCompletionIdFor } from '../definitions/late-completion.js';
import type { LegalHold } from '../definitions/records.js';
import { EsignBatchId, EsignTransactionId } from '../definitions/search-attributes.js';
import { WORKFLOW_TYPE, workflowIdFor } from '../definitions/transaction.js';
import { REFERENCE_ID, REFERENCE_ID_RULE } from '../transaction/input.js';

export interface EraseDeps {
  client: Client;
  dataKeys: DataKeys;
  holds: () => Promise<LegalHold[]>;
  /** Where the archives are, to say what is kept and until when; without it the report says it could not look. */
  archives?: ArchiveStore;
  now?: () => Date;
}

export interface ErasureReport {
  referenceId: string;
  erasedAt: string;
  by: string;
  /** The data keys destroyed, by workflow id: their payloads can no longer be read. */
  keys: { id: string; workflowId: string; createdAt: string }[];
  /** The workflows whose histories held the referenceId's payloads (each now unreadable). */
  workflows: { workflowId: string; runId: string; status: string; closedAt: string | null }[];
  /** Runs that started while it was being erased: ended (they could not read their own input). */
  startedDuringErasure: string[];
  /** What the archive keeps, and why. */
  archives: { transactionId: string; kept: boolean; retainedUntil: string | null; why: string }[];
}

/** Erasure refused, with its reason: a hold, something running, no key store. Nothing was destroyed. */
export class ErasureRefused extends Error {
  override readonly name = 'ErasureRefused';
}

/** What erasure reads of a workflow execution, listed or described. */
type Execution = Pick<WorkflowExecutionInfo, 'workflowId' | 'runId' | 'type' | 'status' | 'closeTime' | 'typedSearchAttributes'>;

const quote = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export async function eraseReference(
  deps: EraseDeps,
  referenceId: string,
  by: string,
  options: { closeEventLog?: boolean } = {},
): Promise<ErasureReport> {
  // A string that is not a referenceId could name another workflow: `legal-holds` would shred the holds register.
  if (!REFERENCE_ID.test(referenceId))
    throw new ErasureRefused(`"${referenceId.slice(0, 140)}" is not a referenceId: it ${REFERENCE_ID_RULE}`);
  const at = (deps.now?.() ?? new Date()).toISOString();
  // Opened first: nothing is ended or destroyed for a store that is not there.
  const store = await deps.dataKeys.store();
  const executions = await listExecutions(deps.client, referenceId);
  const transactionIds = unique(executions.map((e) => e.typedSearchAttributes.get(EsignTransactionId)));
  const batchIds = unique(executions.map((e) => e.typedSearchAttributes.get(EsignBatchId)));
  const covered = { reference: [referenceId], transaction: transactionIds, batch: batchIds };
  const held = (await deps.holds()).filter((h) => !h.released && covered[h.scope].includes(h.target));
  if (held.length > 0)
    throw new ErasureRefused(`${referenceId} is held: ${held.map((h) => `${h.id} (${h.scope} ${h.target}: ${h.reason})`).join('; ')}`);

  // Each workflow whose data key goes, with the type it must be: a workflow id of another kind is not this referenceId's.
  const subjects = new Map<string, string>([
    [workflowIdFor(referenceId), WORKFLOW_TYPE],
    [eventLogIdFor(referenceId), EVENT_LOG_WORKFLOW_TYPE],
    ...transactionIds.flatMap((t): [string, string][] => [
      [inboxIdFor(t), INBOX_WORKFLOW_TYPE],
      [lateCompletionIdFor(t), LATE_COMPLETION_WORKFLOW_TYPE],
    ]),
  ]);
  // The listing may hold the event log too (it carries the referenceId): one entry per run.
  const relatedNow = async () => uniqueBy([...executions, ...(await describeAll(deps.client, [...subjects.keys()]))], runKey);
  let related = await relatedNow();
  const foreign = related.filter((e) => subjects.has(e.workflowId) && e.type !== subjects.get(e.workflowId));
  if (foreign.length > 0)
    throw new ErasureRefused(`${foreign.map((e) => `${e.workflowId} is a ${e.type}`).join(', ')}: not a workflow of ${referenceId}`);
  const running = related.filter((e) => e.status.name === 'RUNNING');
  const log = eventLogIdFor(referenceId);
  // The log stays after its transactions ended only to redeliver (30 days): an erasure may end that early.
  if (options.closeEventLog && running.length === 1 && running[0]!.workflowId === log) {
    await deps.client.workflow.getHandle(log, running[0]!.runId).terminate('its referenceId is being erased (esign erase)');
    related = await relatedNow();
  } else if (running.length > 0)
    throw new ErasureRefused(
      `${referenceId} still runs: ${running.map((e) => e.workflowId).join(', ')}; erase it once they end` +
        (running.some((e) => e.workflowId === log)
          ? ' (its event log stays open 30 days after its transactions to redeliver: --close-event-log ends it now)'
          : ''),
    );
  // What no data key covers would stay readable: refused rather than reported as erased.
  const beyond = await underMasterKeys(deps.client, related);
  if (beyond.length > 0)
    throw new ErasureRefused(
      `${beyond.map((b) => `${b.payloads} payload(s) of ${b.workflowId} (run ${b.runId})`).join(', ')} are under a codec master key ` +
        '(written before the key store, or by a process without it), which no erasure reaches: delete those runs ' +
        "(`temporal workflow delete`) or wait for the namespace's retention",
    );

  const keys: ErasureReport['keys'] = [];
  for (const subject of subjects.keys())
    for (const k of await store.erase(subject, at, by)) keys.push({ id: k.id, workflowId: subject, createdAt: k.createdAt });

  // A run started between the checks and the erasure cannot read its own input now: it is ended, and said.
  const late = (await relatedNow()).filter((e) => e.status.name === 'RUNNING');
  for (const e of late)
    await deps.client.workflow
      .getHandle(e.workflowId, e.runId)
      .terminate('started while its referenceId was being erased: its payloads cannot be read')
      .catch(() => undefined);

  return {
    referenceId,
    erasedAt: at,
    by,
    keys,
    workflows: (await relatedNow()).map((e) => ({
      workflowId: e.workflowId,
      runId: e.runId,
      status: e.status.name,
      closedAt: e.closeTime?.toISOString() ?? null,
    })),
    startedDuringErasure: late.map((e) => e.workflowId),
    archives: await Promise.all(transactionIds.map((t) => archived(deps.archives, t))),
  };
}

/**
 * The runs with encrypted payloads under a codec master key rather than a data key: their history is read, every
 * payload's key id looked at (a workflow task the worker could not decode is left out: it says only a key id).
 */
async function underMasterKeys(
  client: Client,
  runs: readonly Execution[],
): Promise<{ workflowId: string; runId: string; payloads: number }[]> {
  const found: { workflowId: string; runId: string; payloads: number }[] = [];
  for (const run of runs) {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    let payloads = 0;
    for (const event of history.events ?? []) {
      if (event.workflowTaskFailedEventAttributes) continue;
      walkPayloads(event, (p) => {
        const encoding = p.metadata?.[METADATA_ENCODING_KEY];
        const keyId = p.metadata?.[KEY_ID_METADATA];
        if (
          encoding &&
          Buffer.from(encoding).toString() === ENCRYPTED_ENCODING &&
          !Buffer.from(keyId ?? [])
            .toString()
            .startsWith(DATA_KEY_PREFIX)
        )
          payloads++;
      });
    }
    if (payloads > 0) found.push({ workflowId: run.workflowId, runId: run.runId, payloads });
  }
  return found;
}

type RawPayload = { metadata?: Record<string, Uint8Array | null> | null; data?: Uint8Array | null };

/** Every payload in a history event, wherever the event keeps it. */
function walkPayloads(node: unknown, visit: (p: RawPayload) => void, depth = 0): void {
  if (node === null || typeof node !== 'object' || depth > 32 || node instanceof Uint8Array) return;
  const p = node as RawPayload;
  if (p.metadata && typeof p.metadata === 'object' && METADATA_ENCODING_KEY in p.metadata) {
    visit(p);
    return;
  }
  for (const value of Object.values(node)) walkPayloads(value, visit, depth + 1);
}

/** Every execution (any run) of the referenceId's transactions, from the visibility store. */
async function listExecutions(client: Client, referenceId: string): Promise<Execution[]> {
  const found: Execution[] = [];
  for await (const e of client.workflow.list({ query: `EsignReferenceId = ${quote(referenceId)}` })) found.push(e);
  return found;
}

/** The workflows that exist under these ids (their latest run each). */
async function describeAll(client: Client, workflowIds: readonly string[]): Promise<Execution[]> {
  const found = await Promise.all(
    workflowIds.map((id) =>
      client.workflow
        .getHandle(id)
        .describe()
        .catch((err: unknown) => {
          if ((err as Error).name === 'WorkflowNotFoundError') return undefined;
          throw err;
        }),
    ),
  );
  return found.filter((e): e is NonNullable<typeof e> => e !== undefined);
}

async function archived(archives: ArchiveStore | undefined, transactionId: string): Promise<ErasureReport['archives'][number]> {
  if (!archives)
    return { transactionId, kept: false, retainedUntil: null, why: 'archive not looked up (no archive store configured here)' };
  const stored = await archives.find(transactionId);
  if (!stored) return { transactionId, kept: false, retainedUntil: null, why: 'not archived' };
  const { manifest } = stored;
  if (manifest.purged) return { transactionId, kept: false, retainedUntil: null, why: `purged at ${manifest.purged.at}` };
  const until = manifest.retention?.until ?? null;
  return {
    transactionId,
    kept: true,
    retainedUntil: until,
    why: until
      ? `signed records are kept for their retention (${manifest.retention!.period}, ${manifest.retention!.source}); purged on ${until}`
      : 'it records no retention (archived before retention was recorded): kept until an operator decides',
  };
}

const runKey = (e: Execution) => `${e.workflowId}/${e.runId}`;
const unique = (values: (string | undefined)[]) => [...new Set(values.filter((v): v is string => v !== undefined))];
const uniqueBy = <T>(values: T[], key: (v: T) => string) => [...new Map(values.map((v) => [key(v), v])).values()];
