/**
 * What must hold after the operator's and the server's moves (explore/schedule.ts `addOperations`), on top of the
 * checks every schedule gets (explore/checks.ts):
 *
 * - upkeep: every evidence upkeep walk ended with a result; it asked about every archive there when it started, each
 *   once (a retry aside), and about no key the archive does not hold; its totals are what the renewals answered (a
 *   failed one counted refused), across its continue-as-new; no archive was lost, its ZIP untouched, its renewals
 *   numbered 1 to n, each at most once per archive (a retry after a commit finds it current);
 * - versioning: a pinned run told its deployment's target version changed (or a run the server told to continue as
 *   new) moved only by continuing as new, or ended; it did so within its longest wait between two tasks (and an hour
 *   for what was in flight); a pinned run continued as new to the target version (`AUTO_UPGRADE`), where the test
 *   server records it.
 *
 * The terminations (an event log, a late completion) are the transaction checks' business: what they allow after
 * one is in explore/checks.ts.
 */
import proto from '@temporalio/proto';
import type { Observation, RecordedHistory, UpkeepWalk } from './observation.js';
import type { RenewalCall } from './upkeep.js';
import { LEGAL_HOLDS_WORKFLOW_ID } from '../src/definitions/records.js';

type Found = (check: 'upkeep' | 'versioning', detail: string) => void;

const { EventType, ContinueAsNewVersioningBehavior } = proto.temporal.api.enums.v1;
const HOUR = 3_600_000;

export function checkOperations(observation: Observation, found: Found): void {
  const operations = observation.operations;
  if (!operations) return;
  for (const walk of operations.upkeeps) checkWalk(observation, walk, found);
  if (operations.upkeeps.length > 0) checkArchives(observation, found);
  for (const hint of operations.hints) {
    const history = observation.histories.find((h) => h.runId === hint.runId);
    if (!history) continue;
    // The upkeep continues as new only between pages: what it must do then is checkWalk's.
    if (hint.workflowId.startsWith('esign-upkeep-')) continue;
    const what = `${hint.workflowId} (run ${hint.runId}), told ${hint.kind === 'targetVersionChanged' ? 'its target version changed' : 'to continue as new'} at +${Math.round((hint.at - observation.startedAt) / 1000)}s`;
    const close = closeOf(history);
    const shown = (history.history.events ?? []).some(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && Number(e.eventId) >= hint.fromEventId,
    );
    if (!close) continue; // still open: the transaction's own checks say it did not end
    const moved = close.type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW;
    if (shown && !moved && close.type !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED && !terminatedByExplorer(close))
      found('versioning', `${what}: closed ${eventName(close.type)}, neither continued as new nor ended`);
    // An idle event log, or holds register, waits for news: it continues as new at its next message, however far off.
    if (hint.workflowId.startsWith('esign-events-') || hint.workflowId === LEGAL_HOLDS_WORKFLOW_ID) continue;
    const bound = hint.at + 1.1 * hint.maxPollMs + HOUR;
    if (close.at > bound && !terminatedByExplorer(close))
      found(
        'versioning',
        `${what}: still on its run ${Math.round((close.at - hint.at) / 60_000)} min later (its longest wait is ${Math.round(hint.maxPollMs / 60_000)} min)`,
      );
    // A run that continued as new for its own reason (a full history) in the task it was in when the hint came was
    // never shown the flag: it rightly stays on its version.
    if (moved && shown && hint.kind === 'targetVersionChanged') {
      // What the worker's command asked (the test server does not record it in the event, as a real server does).
      const behavior: number =
        operations.continuedAs[hint.runId] ?? close.event.workflowExecutionContinuedAsNewEventAttributes?.initialVersioningBehavior ?? 0;
      if (behavior !== Number(ContinueAsNewVersioningBehavior.CONTINUE_AS_NEW_VERSIONING_BEHAVIOR_AUTO_UPGRADE))
        found(
          'versioning',
          `${what}: continued as new ${ContinueAsNewVersioningBehavior[behavior as proto.temporal.api.enums.v1.ContinueAsNewVersioningBehavior] ?? String(behavior)}, not to the target version (AUTO_UPGRADE)`,
        );
    }
  }
}

function checkWalk(observation: Observation, walk: UpkeepWalk, found: Found): void {
  const upkeep = observation.operations!.upkeep;
  const label = `upkeep ${walk.workflowId}`;
  if (walk.end.kind !== 'result') {
    found('upkeep', `${label} did not end: ${walk.end.kind === 'failed' ? walk.end.message : walk.end.where}`);
    return;
  }
  const calls = upkeep.calls.filter((c) => c.workflowId === walk.workflowId);
  // One logical call per (run, activity); its attempts in order, the last the one the walk was answered.
  const logical = new Map<string, RenewalCall[]>();
  for (const c of calls) logical.set(`${c.runId}/${c.activityId}`, [...(logical.get(`${c.runId}/${c.activityId}`) ?? []), c]);
  const asked = new Map<string, number>();
  const finals: RenewalCall[] = [];
  for (const attempts of logical.values()) {
    const last = attempts.reduce((a, b) => (b.attempt >= a.attempt ? b : a));
    finals.push(last);
    asked.set(last.key, (asked.get(last.key) ?? 0) + 1);
  }
  for (const [key, n] of asked) if (n > 1) found('upkeep', `${label} renewed ${key} ${n} times in one walk`);
  const keys = new Set(upkeep.keys());
  for (const key of walk.keysAtStart) if (!asked.has(key)) found('upkeep', `${label} never looked at ${key}, archived before it started`);
  for (const key of asked.keys()) if (!keys.has(key)) found('upkeep', `${label} looked at ${key}, which the archive does not hold`);
  const count = (status: RenewalCall['outcome']) => finals.filter((c) => c.outcome === status);
  const totals = walk.end.result;
  const expected = {
    checked: finals.length,
    renewed: count('renewed').length,
    lapsed: count('lapsed').length,
    skipped: count('skipped').length,
    refused: count('refused').length + count('failed').length,
  };
  const got = { checked: totals.checked, renewed: totals.renewed, lapsed: totals.lapsed, skipped: totals.skipped, refused: totals.refused };
  if (JSON.stringify(got) !== JSON.stringify(expected))
    found('upkeep', `${label} counted ${JSON.stringify(got)}; its renewals answered ${JSON.stringify(expected)}`);
  const sorted = (xs: readonly string[]) => [...xs].sort().join(',');
  const lapsedKeys = count('lapsed').map((c) => c.key);
  const refusedKeys = [...count('refused'), ...count('failed')].map((c) => c.key);
  if (lapsedKeys.length <= 100 && sorted(totals.lapsedKeys) !== sorted(lapsedKeys))
    found('upkeep', `${label} named lapsed ${totals.lapsedKeys.join(', ') || 'none'}, not ${lapsedKeys.join(', ') || 'none'}`);
  if (refusedKeys.length <= 100 && sorted(totals.refusedKeys) !== sorted(refusedKeys))
    found('upkeep', `${label} named refused ${totals.refusedKeys.join(', ') || 'none'}, not ${refusedKeys.join(', ') || 'none'}`);
  // The walk's runs: each under the server's suggestion (it continues as new between pages when told to).
  for (const h of observation.histories.filter((x) => x.workflowId === walk.workflowId)) {
    const length = h.history.events?.length ?? 0;
    if (length > UPKEEP_HISTORY_BOUND)
      found('upkeep', `${label} run ${h.runId} has ${length} events; its bound is ${UPKEEP_HISTORY_BOUND}`);
  }
}

/** Where a real server suggests continue-as-new (its default `limit.historyCount.suggestContinueAsNew`). */
export const SERVER_SUGGESTS_CONTINUE_AS_NEW_AT = 4_096;
/** The upkeep's bound: the server's suggestion, plus a page of archives walked before the walk can take it. */
const UPKEEP_HISTORY_BOUND = SERVER_SUGGESTS_CONTINUE_AS_NEW_AT + 500;

/** Every archive is still there, its ZIP untouched, its renewals numbered 1 to n, at most one (the model's evidence lasts). */
function checkArchives(observation: Observation, found: Found): void {
  const upkeep = observation.operations!.upkeep;
  const archives = upkeep.archives();
  const held = new Map(archives.map((a) => [a.key, a]));
  for (const commit of observation.model.archives) {
    const a = held.get(commit.key);
    if (!a) found('upkeep', `the archive ${commit.key} is gone`);
    else if (a.zipSha256 !== commit.sha256) found('upkeep', `the archive ${commit.key}'s ZIP changed`);
  }
  for (const key of observation.operations!.upkeeps.flatMap((w) => w.keysAtStart))
    if (!held.has(key)) found('upkeep', `the archive ${key} is gone`);
  for (const a of archives) {
    if (a.renewals.some((r, i) => r.id !== i + 1))
      found('upkeep', `${a.key}'s renewals are numbered ${a.renewals.map((r) => r.id).join(', ')}`);
    if (a.renewals.length > 1) found('upkeep', `${a.key} was renewed ${a.renewals.length} times, its evidence due once`);
    if (a.renewals.length > 0 && a.evidence !== 'due') found('upkeep', `${a.key} was renewed though its evidence is ${a.evidence}`);
  }
}

type EventTypeValue = proto.temporal.api.enums.v1.EventType;

function closeOf(h: RecordedHistory): { type: EventTypeValue; at: number; event: proto.temporal.api.history.v1.IHistoryEvent } | undefined {
  const last = h.history.events?.at(-1);
  const type = last?.eventType ?? EventType.EVENT_TYPE_UNSPECIFIED;
  if (!CLOSES.has(type)) return undefined;
  const t = last!.eventTime;
  return { type, at: Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6), event: last! };
}

const CLOSES = new Set<EventTypeValue>([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

/** Terminated at the schedule's end (a run that stalled) or by the schedule's operator: not the run's doing. */
function terminatedByExplorer(close: { type: EventTypeValue }): boolean {
  return close.type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED;
}

function eventName(type: EventTypeValue): string {
  return (EventType[type] ?? String(type)).replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '');
}
