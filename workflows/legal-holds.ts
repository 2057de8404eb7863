/**
 * The namespace's register of legal holds (docs/records.md): one long-lived workflow, `esign-legal-holds`, whose
 * history is the audit of every hold placed and released, with who asked and why. The purge reads it before it
 * destroys an archive, and refuses while a hold stands. After each change, the archive store's own legal hold (S3
 * Object Lock) is set or cleared on the archives it covers, so the bucket too refuses to delete them. Started by
 * the first hold (update-with-start); it runs for ever, continuing as new when its history is long.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  setHandler,
  setWorkflowOptions,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import {
  HOLD_SCOPES,
  holdsQuery,
  placeHoldUpdate,
  releaseHoldUpdate,
  type HoldRequest,
  type HoldTarget,
  type LegalHold,
  type LegalHoldsState,
  type ReleaseRequest,
} from '../src/definitions/records.js';
import { ARCHIVE_WALK, step } from './activity-options.js';
import { Clock } from './clock.js';
import { S3_OBJECT_LEGAL_HOLD } from './patches.js';
import { versioningBehavior } from './versioning.js';

/** Holds kept, standing and released: past this, new holds are refused (the register's state must stay small). */
export const MAX_HOLDS = 2_000;
const MAX_TEXT = 500;

const text = (value: unknown, name: string): string | undefined =>
  typeof value !== 'string' || value.trim() === '' || value.length > MAX_TEXT ? `${name} must be 1 to ${MAX_TEXT} characters` : undefined;

/** Why a hold cannot be placed, or undefined. Checks the shape: another SDK may send it. */
export function refuseHold(holds: readonly LegalHold[], raw: unknown): string | undefined {
  const r = (raw ?? {}) as Partial<Record<string, unknown>>;
  if (!(HOLD_SCOPES as readonly unknown[]).includes(r.scope)) return `scope must be one of ${HOLD_SCOPES.join(', ')}`;
  if (typeof r.target !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(r.target))
    return 'target must be a transactionId or a referenceId (1-128 letters, digits, . _ : -)';
  const why = text(r.reason, 'reason') ?? text(r.by, 'by');
  if (why) return why;
  if (holds.length >= MAX_HOLDS) return `the register keeps ${MAX_HOLDS} holds at most`;
  return undefined;
}

/** Why a hold cannot be released, or undefined. */
export function refuseRelease(holds: readonly LegalHold[], raw: unknown): string | undefined {
  const r = (raw ?? {}) as Partial<Record<string, unknown>>;
  const hold = holds.find((h) => h.id === r.holdId);
  if (!hold) return `no hold ${String(r.holdId)}`;
  if (hold.released) return `hold ${hold.id} was released at ${hold.released.at}`;
  return text(r.reason, 'reason') ?? text(r.by, 'by');
}

export async function legalHolds(state: LegalHoldsState = { holds: [] }): Promise<void> {
  const clock = new Clock();
  const { holds } = state;
  // What holds changed on, for the store to follow. A run whose store never followed (the first, or one continued
  // from code before it did) starts with everything that stands.
  const unapplied: HoldTarget[] = state.unapplied ? [...state.unapplied] : inForce(holds);
  let following = state.unapplied !== undefined;
  const changed = (hold: LegalHold): LegalHold => {
    unapplied.push({ scope: hold.scope, target: hold.target });
    return hold;
  };
  setHandler(holdsQuery, () => holds);
  // The answers never wait for the store: they are the record (the history), which the main loop then follows.
  setHandler(placeHoldUpdate, (request) => changed(place(holds, request, clock)), { validator: (r) => throwIf(refuseHold(holds, r)) });
  setHandler(releaseHoldUpdate, (request) => changed(release(holds, request, clock)), {
    validator: (r) => throwIf(refuseRelease(holds, r)),
  });
  // Handed over when the history grows long, after answers in flight; what the store has yet to follow goes along.
  const handOver = () => workflowInfo().continueAsNewSuggested && allHandlersFinished();
  for (;;) {
    await condition(() => unapplied.length > 0 || handOver());
    if (handOver()) break;
    if (!patched(S3_OBJECT_LEGAL_HOLD)) {
      // A history from before the store followed the register: it recorded nothing here.
      unapplied.length = 0;
      continue;
    }
    if (!following) {
      // The first change this run follows: the archives of every standing hold too, which nothing held before.
      following = true;
      unapplied.push(...inForce(holds));
    }
    const scopes = distinct(unapplied.splice(0));
    try {
      await step(ARCHIVE_WALK, 'Set the legal hold of the archives whose holds changed').applyLegalHolds({ holds: inForce(holds), scopes });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Retried for as long as it fails, so only a failure that is not retried comes here: the holds stand in the
      // register whatever the store did, and the store is asked again later.
      log.error('legal holds not applied to the archive store: tried again in an hour', { error: (err as Error).message });
      unapplied.unshift(...scopes);
      await condition(handOver, '1 hour');
    }
  }
  await continueAsNew<typeof legalHolds>({ holds, ...(following ? { unapplied } : {}) });
}

/** What the standing holds cover, each once. */
function inForce(holds: readonly LegalHold[]): HoldTarget[] {
  return distinct(holds.filter((h) => !h.released));
}

function distinct(targets: readonly HoldTarget[]): HoldTarget[] {
  const seen = new Map(targets.map((t) => [`${t.scope}:${t.target}`, { scope: t.scope, target: t.target }]));
  return [...seen.values()];
}

function throwIf(reason: string | undefined): void {
  if (reason !== undefined) throw new Error(reason);
}

function place(holds: LegalHold[], { scope, target, reason, by }: HoldRequest, clock: Clock): LegalHold {
  const hold: LegalHold = { id: `hold-${uuid4()}`, scope, target, reason: reason.trim(), by: by.trim(), placedAt: clock.iso() };
  holds.push(hold);
  return hold;
}

function release(holds: LegalHold[], { holdId, reason, by }: ReleaseRequest, clock: Clock): LegalHold {
  const hold = holds.find((h) => h.id === holdId)!;
  hold.released = { at: clock.iso(), by: by.trim(), reason: reason.trim() };
  return hold;
}

// Auto-upgrade: a register that runs for ever moves to each new version at its next task (a change needs patched()).
setWorkflowOptions(versioningBehavior('AUTO_UPGRADE'), legalHolds);
