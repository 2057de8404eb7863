/**
 * The namespace's register of legal holds (docs/records.md): one long-lived workflow, `esign-legal-holds`, whose
 * history is the audit of every hold placed and released, with who asked and why. The purge reads it before it
 * destroys an archive, and refuses while a hold stands. Started by the first hold (update-with-start); it runs for
 * ever, continuing as new when its history is long.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, setWorkflowOptions, uuid4, workflowInfo } from '@temporalio/workflow';
import {
  HOLD_SCOPES,
  holdsQuery,
  placeHoldUpdate,
  releaseHoldUpdate,
  type HoldRequest,
  type LegalHold,
  type ReleaseRequest,
} from '../src/definitions/records.js';
import { Clock } from './clock.js';
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

export async function legalHolds(state: { holds: LegalHold[] } = { holds: [] }): Promise<void> {
  const clock = new Clock();
  const { holds } = state;
  setHandler(holdsQuery, () => holds);
  setHandler(placeHoldUpdate, (request) => place(holds, request, clock), { validator: (r) => throwIf(refuseHold(holds, r)) });
  setHandler(releaseHoldUpdate, (request) => release(holds, request, clock), { validator: (r) => throwIf(refuseRelease(holds, r)) });
  // Nothing to do but answer: the history is the record. Handed over when it grows long, after answers in flight.
  await condition(() => workflowInfo().continueAsNewSuggested && allHandlersFinished());
  await continueAsNew<typeof legalHolds>({ holds });
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
