/** Timeouts and retry policies of the workflows' activities (docs/workflow.md tables them). */
import { type ActivityOptions, type LocalActivityOptions, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { EsignActivities } from '../activities/index.js';

const retry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '2 minutes' } as const;

// Activities heartbeat every 2 s while they run (activities/support/heartbeat.ts), so a dead worker is noticed
// within the heartbeat timeout, however long the start-to-close allows a slow upload or download.
export const UPLOAD = { startToCloseTimeout: '10 minutes', heartbeatTimeout: '20 seconds', retry } as const;
export const PROVIDER = { startToCloseTimeout: '2 minutes', heartbeatTimeout: '10 seconds', retry } as const;
/** Reconciliation polls give up quickly: the next poll comes anyway. */
export const POLL = { ...PROVIDER, startToCloseTimeout: '30 seconds', retry: { ...retry, maximumAttempts: 3 } } as const;
/** One archive's evidence renewal: attempts are bounded, so an archive that keeps failing is reported and the walk goes on. */
export const UPKEEP = {
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: { ...retry, maximumAttempts: 10 },
} as const;
/** A bulk send's short steps: a page of starts, a count. */
export const BULK = { startToCloseTimeout: '5 minutes', heartbeatTimeout: '30 seconds', retry } as const;
/** A bulk send's passes over its files or all its transactions (the CSV, the cancels, the result): long, heartbeating. */
export const BULK_FILES = { startToCloseTimeout: '1 hour', heartbeatTimeout: '1 minute', retry } as const;
/** A pass over the whole archive in one activity (legal holds set where they changed): a retry resumes from its heartbeat. */
export const ARCHIVE_WALK = { startToCloseTimeout: '1 hour', heartbeatTimeout: '1 minute', retry } as const;
export const ARCHIVE = { startToCloseTimeout: '30 minutes', heartbeatTimeout: '20 seconds', retry } as const;
/**
 * Short, idempotent provider calls (reads, a signing URL, the inbox registration) run as local
 * activities: they complete inside the workflow task that asked for them, saving a server round
 * trip and three history events each. A retry waits in the workflow task (or, past a minute, on a timer).
 */
const LOCAL_PROVIDER = { startToCloseTimeout: '30 seconds', retry } as const;
/** A reconciliation poll run locally, giving up as quickly as POLL does. */
export const LOCAL_POLL = { ...LOCAL_PROVIDER, retry: { ...retry, maximumAttempts: 3 } } as const;
export const REPORT = {
  startToCloseTimeout: '30 seconds',
  retry: { ...retry, maximumInterval: '5 minutes', maximumAttempts: 20 },
} as const;

/** Activities whose calls carry a summary, so the Web UI's timeline reads as the business process. */
export const step = (options: ActivityOptions, summary: string) => proxyActivities<EsignActivities>({ ...options, summary });

/** The same, for local activities (docs/workflow.md says which steps run locally, and why). */
export const localStep = (options: LocalActivityOptions, summary: string) => proxyLocalActivities<EsignActivities>({ ...options, summary });
