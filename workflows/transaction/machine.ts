/**
 * One signature transaction's state and its transitions: what the workflow knows of the provider's transaction, what
 * it was asked, and what it still has to do. Pure: no activities, no timers; the workflow (../esign-transaction.ts)
 * acts on what this class decides, and the handlers (./handlers.ts) delegate to it. Phases move only along
 * ./transitions.ts.
 */
import { log, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { SearchAttributes } from './attributes.js';
import { Held } from './held.js';
import type { TransactionState } from '../../activities/transactions.js';
import { ESIGN_COMPLETED_EVENT, isEndEvent, isProviderEndStatus, type EsignEndEvent } from '../../src/esign/events.js';
import type { CreateTransactionRequest, EsignWebhook, Participant } from '../../src/esign/schemas.js';
import type { ValidEsignTransactionInput } from '../../src/transaction/input.js';
import type { EsignPhase, EsignTransactionResult } from '../../src/definitions/transaction.js';
import type { CorrectionRecord } from '../../src/definitions/corrections.js';
import { EsignStatus } from '../../src/definitions/search-attributes.js';
import { Progress } from '../progress.js';
import type { ContinuedTransaction } from './continued.js';
import { FINAL, isAllowed, OPEN_PHASES, type Observation } from './transitions.js';

/** A cancel being carried out: every `cancel` update waiting on it gets its outcome. */
export interface CancelAttempt {
  reason: string;
  refused?: { message: string; type: string };
}

const SEEN_KEPT = 200;
export class SigningTransaction {
  phase: EsignPhase;
  /** Set once validated; runs continued as new start with it. */
  input: ValidEsignTransactionInput | undefined;
  participants: Participant[];
  deadlineAt: number;
  request: CreateTransactionRequest | undefined;
  /** SHA-256 of each PDF we uploaded, by StoragePath: the archive checks the provider signed exactly these. */
  originals: Record<string, string>;
  created: { transactionId: string; esignId: string } | undefined;
  providerStatus: string | null;
  progress: Progress | undefined;
  /** A participant event arrived: read the record to learn who did what; a read went unanswered: poll soon. */
  progressStale = false;
  readSoon = false;
  reminders: { sent: number; nextAt: number | null };
  /** The end a webhook (or poll) announced, still to be confirmed with the provider. */
  notified: EsignEndEvent | undefined;
  cancel: CancelAttempt | undefined;
  withdrawing = false; // a withdraw (cancel or deadline) is under way: no replace may start
  notFoundSince: number | undefined; // when the provider first answered 404 for it, with no answer since (./steps.ts)
  replaceLandsUntil = 0; // until when a replace given up on may still land (its landsUntil): a withdraw waits past it
  lastReconciledAt: string | null;
  accepted: number;
  rejected: number;
  result: EsignTransactionResult | null = null;
  /** Bumped by every message: a busy transaction polls at its shortest interval. */
  activity = 0;
  readonly seen: Set<string>;
  pollMs: number;
  readonly runs: number;
  archiveProblem: string | undefined;
  /** `retryArchive` requests not yet served, and archive attempts refused so far (their handlers wait on these). */
  archiveRetriesAsked = 0;
  archiveRefusals: number;
  /** A completion that arrived after this run's outcome (not completed) was set: the finish archives it late. */
  completedAfterEnd = false;
  /** Notifications that came before creation, and other transactions' completions (./held.ts). */
  readonly held = new Held();
  /** What operators filter on, sent once per burst of changes. */
  readonly attributes = new SearchAttributes();
  /** Events given to the integrator's event log so far: the last one's sequence number (0: no log yet). */
  eventsSent: number;
  /** Corrections taken, in order, for the audit (./corrections.ts); `rescheduled`: the loop's wait is planned again. */
  readonly corrections: CorrectionRecord[];
  rescheduled = false;
  approval: ContinuedTransaction['approval']; // its approvers' answers (./approving.ts), when it names any

  constructor(continued: ContinuedTransaction | undefined) {
    this.phase = continued?.phase ?? 'uploading';
    this.participants = continued?.participants ?? [];
    this.deadlineAt = continued?.deadlineAt ?? 0;
    this.request = continued?.request;
    this.originals = continued?.originals ?? {};
    this.created = continued?.created;
    this.providerStatus = continued?.providerStatus ?? null;
    this.progress = continued ? new Progress(continued.participants, continued.progress, continued.announced) : undefined;
    this.reminders = continued?.reminders ?? { sent: 0, nextAt: null };
    this.replaceLandsUntil = continued?.replaceLandsUntil ?? 0;
    this.lastReconciledAt = continued?.lastReconciledAt ?? null;
    this.accepted = continued?.accepted ?? 0;
    this.rejected = continued?.rejected ?? 0;
    this.seen = new Set(continued?.seen ?? []);
    this.pollMs = continued?.pollMs ?? 0;
    this.runs = continued?.runs ?? 1;
    this.archiveProblem = continued?.archiveProblem;
    this.archiveRefusals = continued?.archiveRefusals ?? 0;
    this.eventsSent = continued?.eventsSent ?? 0;
    this.corrections = continued?.corrections ?? [];
    this.approval = continued?.approval;
  }

  // ------------------------------------------------------------ phases

  /** Moves along the table (and tells operators: the search attribute and the Web UI's line). */
  moveTo(next: EsignPhase): void {
    // A defect, not a condition: the workflow task fails and retries until a fixed worker takes it.
    if (!isAllowed(this.phase, next)) throw new Error(`transaction state machine: no move from ${this.phase} to ${next}`);
    this.phase = next;
    this.attributes.set([{ key: EsignStatus, value: next }]);
    setCurrentDetails(this.currentDetails());
  }

  get finished(): boolean {
    return FINAL.includes(this.phase);
  }

  get open(): boolean {
    return OPEN_PHASES.includes(this.phase);
  }

  /** Archiving, archive refused, ended, or a cancel under way: no new signing URLs, replaces or cancels. */
  isFinishing(): boolean {
    return this.finished || this.phase === 'archiving' || this.phase === 'archive_invalid' || this.cancel !== undefined;
  }

  /** Something the main loop must do before it waits again (or hands over to a new run). */
  hasWork(): boolean {
    return (
      this.notified !== undefined ||
      (this.cancel !== undefined && this.cancel.refused === undefined) ||
      this.progressStale ||
      this.archiveRetriesAsked > 0 ||
      this.held.strays.length > 0
    );
  }

  /** The Web UI's one line: where the transaction is, and who it waits for. */
  currentDetails(): string {
    if (this.finished) return `Ended ${this.phase}${this.result?.reason ? `: ${this.result.reason}` : ''}`;
    const who = this.progress?.known ? this.progress.summary() : `${this.participants.length} participant(s) to sign`;
    if (this.phase === 'awaiting_signatures') return who;
    if (this.phase === 'overdue') return `Overdue: ${who}`;
    if (this.phase === 'archive_invalid') return `Archive refused, waiting for an operator: ${this.archiveProblem ?? ''}`;
    return this.phase.replace('_', ' ');
  }

  // ---------------------------------------------------------- messages

  /** A provider notification (a webhook, routed by the bridge): deduplicated, matched, then noted for the loop. */
  receive(notification: EsignWebhook | string): void {
    if (typeof notification === 'string') {
      this.rejected++;
      log.warn('invalid notification signal ignored', { issue: notification });
      return;
    }
    const id = notification.data.notificationId;
    if (this.seen.has(id)) return; // redelivery: one effect per notification
    const { created } = this;
    if (!created) {
      // The provider may notify before its create response reached us: matched once the ids are known (adoptEarly).
      this.held.holdEarly(notification);
      return;
    }
    this.seen.add(id);
    if (notification.data.transaction_id !== created.transactionId) {
      this.rejected++;
      this.held.holdStray(notification);
      return;
    }
    if (notification.data.entity_id !== created.esignId) {
      this.rejected++;
      log.warn('notification naming another eSign session ignored', { notificationId: id });
      return;
    }
    this.accepted++;
    this.activity++;
    if (this.result !== null) {
      // Ended otherwise than completed: the finish hands this completion to a late archive.
      if (notification.event === ESIGN_COMPLETED_EVENT && this.result.status !== 'completed') this.completedAfterEnd = true;
      return;
    }
    if (!isEndEvent(notification.event)) {
      // Marked whatever this run's version: the version is known only once the transaction exists,
      // and runs without progress never count it as work (hasWork), so their loop does not spin on it.
      this.progressStale = true;
      return;
    }
    // A completion outranks any other end: the ZIP must be archived.
    if (this.notified !== ESIGN_COMPLETED_EVENT) this.notified = notification.event;
  }

  /** Once created: the notifications held before, matched now. */
  adoptEarly(): void {
    for (const held of this.held.takeEarly()) this.receive(held);
  }

  /** A cancel request: the loop withdraws, then ends, or refuses it with the provider's reason. */
  requestCancel(reason: string | undefined): CancelAttempt {
    this.activity++;
    return (this.cancel ??= { reason: reason?.slice(0, 500) || 'cancelled on request' });
  }

  // ------------------------------------------------------ the provider

  /** The provider's state, however it was read: records it and says what it means (progress is the caller's). */
  observe(state: Pick<TransactionState, 'status'>): Observation {
    this.providerStatus = state.status;
    this.notFoundSince = undefined; // any answer with the transaction in it (a read, a withdraw's) restarts the 404 count
    if (state.status === 'completed') return { kind: 'completed' };
    if (isProviderEndStatus(state.status)) return { kind: 'ended', status: state.status as Exclude<typeof state.status, 'completed'> };
    return { kind: 'open' };
  }

  unknownParticipants = (ids: string[]): string[] => ids.filter((id) => !this.participants.some((p) => p.id === id));
  nameOf(id: string): string {
    return ((p) => (p ? `${p.firstName} ${p.lastName}` : id))(this.participants.find((x) => x.id === id));
  }

  /** The state the next run starts from. */
  carry(): ContinuedTransaction {
    return {
      participants: this.participants,
      request: this.request!,
      originals: this.originals,
      created: this.created!,
      phase: this.phase,
      deadlineAt: this.deadlineAt,
      providerStatus: this.providerStatus,
      lastReconciledAt: this.lastReconciledAt,
      accepted: this.accepted,
      rejected: this.rejected,
      seen: [...this.seen].slice(-SEEN_KEPT),
      progress: this.progress?.states ?? null,
      announced: [...(this.progress?.announced ?? [])],
      reminders: this.reminders,
      ...(this.replaceLandsUntil > 0 ? { replaceLandsUntil: this.replaceLandsUntil } : {}),
      pollMs: this.pollMs,
      runs: this.runs + 1,
      ...(this.archiveProblem !== undefined ? { archiveProblem: this.archiveProblem } : {}),
      ...(this.archiveRefusals > 0 ? { archiveRefusals: this.archiveRefusals } : {}),
      ...(this.eventsSent > 0 ? { eventsSent: this.eventsSent } : {}),
      ...(this.corrections.length > 0 ? { corrections: this.corrections } : {}),
      ...(this.approval ? { approval: this.approval } : {}),
    };
  }

  /** Whether to hand over to a new run: the history is long enough, or the deployment's target version changed. */
  historyFull(maxEvents: number): boolean {
    const { continueAsNewSuggested, historyLength, targetWorkerDeploymentVersionChanged: moved } = workflowInfo();
    return continueAsNewSuggested || historyLength >= maxEvents || moved;
  }
}
