// What the rolling deploy must prove, from the transactions' histories: a
// pinned run stays on one version; a transaction changes version only at a
// continue-as-new, and only from the old version to the new; every one
// started once the new version was current ran on it; and no run of the old
// version was still open when the old workers were stopped.
import type { Client } from '@temporalio/client';
import type proto from '@temporalio/proto';
import type { RollingDeploy } from './workers.js';

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** One run of a workflow: the events of its history. */
export interface Run {
  events: HistoryEvent[];
}

export interface VersionCounts {
  from: string;
  to: string;
  /** Transactions all of whose runs were on the old version, all on the new one, or that moved at a continue-as-new. */
  transactions: { onOld: number; onNew: number; moved: number };
  runs: { onOld: number; onNew: number };
  /** Seconds from the new version becoming current to the old one drained, and to its workers stopped. */
  drainSeconds: number | null;
  stopSeconds: number | null;
}

/** Every run of a workflow, the first first, followed back from the latest through continue-as-new; none if it has no history. */
export async function runsOf(client: Client, workflowId: string): Promise<Run[]> {
  const runs: Run[] = [];
  let runId: string | undefined;
  for (;;) {
    const history = await client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory()
      .catch((err: unknown) => {
        // The latest run alone may be missing (never started); an earlier one the chain names must exist.
        if (runId === undefined) return undefined;
        throw err;
      });
    if (!history) return runs;
    const events = history.events ?? [];
    runs.unshift({ events });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) return runs;
  }
}

const ms = (t: HistoryEvent['eventTime']) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
const at = (epochMs: number) => new Date(epochMs).toISOString();

/** The build ids whose workers completed a run's workflow tasks (`unversioned` for a worker without a version). */
function buildsOf(run: Run): Set<string> {
  return new Set(
    run.events
      .filter((e) => e.workflowTaskCompletedEventAttributes)
      .map((e) => e.workflowTaskCompletedEventAttributes!.deploymentVersion?.buildId || 'unversioned'),
  );
}

/** Holds each transaction's runs (by referenceId) against the deploy, adding what is wrong to `problems`. */
export function checkVersions(deploy: RollingDeploy, chains: Map<string, Run[]>, problems: string[]): VersionCounts {
  const { from, to, currentAt, drainedAt, stoppingAt, stoppedAt } = deploy;
  const counts: VersionCounts = {
    from,
    to,
    transactions: { onOld: 0, onNew: 0, moved: 0 },
    runs: { onOld: 0, onNew: 0 },
    drainSeconds: currentAt !== undefined && drainedAt !== undefined ? (drainedAt - currentAt) / 1000 : null,
    stopSeconds: currentAt !== undefined && stoppedAt !== undefined ? (stoppedAt - currentAt) / 1000 : null,
  };
  if (deploy.failure) problems.push(`rolling deploy: ${deploy.failure}`);
  else if (currentAt === undefined) problems.push(`rolling deploy: ${to} never became current`);
  else if (stoppingAt === undefined) problems.push(`rolling deploy: the workers of ${from} were never stopped`);

  for (const [referenceId, runs] of chains) {
    const versions = versionsOf(deploy, referenceId, runs, problems, counts.runs);
    if (versions.length === 0) continue;
    if (versions.every((v) => v === from)) counts.transactions.onOld++;
    else if (versions.every((v) => v === to)) counts.transactions.onNew++;
    else counts.transactions.moved++;
  }
  return counts;
}

/**
 * The version of each run of one workflow (`name` in problems), adding to `problems` what breaks the deploy's rules
 * and counting its runs per version in `runCounts`. A run whose tasks were not all completed by one of the two
 * versions is a problem and has no entry.
 */
export function versionsOf(
  deploy: RollingDeploy,
  name: string,
  runs: Run[],
  problems: string[],
  runCounts: VersionCounts['runs'],
): string[] {
  const { from, to, currentAt, stoppingAt } = deploy;
  const versions: string[] = [];
  runs.forEach((run, i) => {
    const builds = [...buildsOf(run)];
    const version = builds[0];
    if (builds.length !== 1 || (version !== from && version !== to)) {
      problems.push(`${name}: run ${i + 1} of ${runs.length} had its workflow tasks completed by ${builds.join(' and ') || 'none'}`);
      return;
    }
    versions.push(version);
    if (version === from) {
      runCounts.onOld++;
      const closed = ms(run.events.at(-1)?.eventTime);
      if (stoppingAt !== undefined && closed > stoppingAt)
        problems.push(
          `${name}: run ${i + 1}, pinned to ${from}, closed at ${at(closed)}, after its workers were stopped (${at(stoppingAt)})`,
        );
    } else runCounts.onNew++;
  });
  // A run's successor is its continue-as-new, so a change between runs is a move at continue-as-new.
  const back = versions.findIndex((v, i) => i > 0 && v === from && versions[i - 1] === to);
  if (back > 0) problems.push(`${name}: went back from ${to} to ${from} at run ${back + 1}`);
  const startedAt = ms(runs[0]?.events[0]?.eventTime);
  if (currentAt !== undefined && startedAt > currentAt && versions.includes(from))
    problems.push(`${name}: started at ${at(startedAt)}, after ${to} became current (${at(currentAt)}), yet ran on ${from}`);
  return versions;
}
