/**
 * Shrinks a failing schedule to one whose every part matters: delta
 * debugging (Zeller's ddmin) over its steps, faults and late moves, then
 * one setup option at a time. A candidate is kept when it still fails the
 * same check. Runs are not perfectly repeatable (the worker's threads and
 * the server race), so a candidate that passes by luck is only a step not
 * taken: the result still fails, it may just not be minimal.
 */
import type { CheckName } from './checks.js';
import type { Schedule, ScheduleSetup } from './schedule.js';

type Atom = { kind: 'step' | 'fault' | 'late' | 'next'; index: number };

export interface ShrinkOptions {
  /** Runs the schedule; resolves with the checks it failed. */
  fails: (schedule: Schedule) => Promise<CheckName[]>;
  /** The check whose failure must persist. */
  check: CheckName;
  /** At most this many runs (each is a whole schedule). */
  maxRuns?: number;
  log?: (line: string) => void;
}

export async function shrink(schedule: Schedule, options: ShrinkOptions): Promise<{ schedule: Schedule; runs: number }> {
  const maxRuns = options.maxRuns ?? 60;
  let runs = 0;
  const stillFails = async (candidate: Schedule) => {
    if (runs >= maxRuns) return false;
    runs++;
    return (await options.fails(candidate)).includes(options.check);
  };

  const build = (atoms: readonly Atom[], setup: ScheduleSetup = schedule.setup): Schedule => ({
    ...schedule,
    setup,
    steps: atoms.filter((a) => a.kind === 'step').map((a) => schedule.steps[a.index]!),
    faults: atoms.filter((a) => a.kind === 'fault').map((a) => schedule.faults[a.index]!),
    late: atoms.filter((a) => a.kind === 'late').map((a) => schedule.late[a.index]!),
    // A later transaction of a reused referenceId goes whole or stays whole.
    ...(schedule.next ? { next: atoms.filter((a) => a.kind === 'next').map((a) => schedule.next![a.index]!) } : {}),
  });
  let atoms: Atom[] = [
    ...schedule.steps.map((_, index) => ({ kind: 'step' as const, index })),
    ...schedule.faults.map((_, index) => ({ kind: 'fault' as const, index })),
    ...schedule.late.map((_, index) => ({ kind: 'late' as const, index })),
    ...(schedule.next ?? []).map((_, index) => ({ kind: 'next' as const, index })),
  ];

  // ddmin: try dropping each of n chunks; on success keep the rest and retry coarser, else refine.
  let n = 2;
  while (atoms.length >= 1 && runs < maxRuns) {
    const size = Math.ceil(atoms.length / n);
    let reduced = false;
    for (let start = 0; start < atoms.length; start += size) {
      const rest = [...atoms.slice(0, start), ...atoms.slice(start + size)];
      if (await stillFails(build(rest))) {
        options.log?.(`shrink: ${atoms.length} -> ${rest.length} parts`);
        atoms = rest;
        n = Math.max(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (size <= 1) break;
      n = Math.min(n * 2, atoms.length);
    }
  }

  // Then the setup: each optional feature off, one at a time, when the failure does not need it.
  let setup = schedule.setup;
  const simpler: ((s: ScheduleSetup) => ScheduleSetup | undefined)[] = [
    (s) => (s.reminders ? { ...s, reminders: undefined } : undefined),
    (s) => (s.approval?.reminders ? { ...s, approval: { ...s.approval, reminders: undefined } } : undefined),
    // Reminders, the signers' and the approvers', go to the callback.
    (s) => (s.callback && !s.reminders && !s.approval?.reminders ? { ...s, callback: false } : undefined),
    (s) => (s.signingUrlWithStart ? { ...s, signingUrlWithStart: false } : undefined),
    (s) => (s.archivePrefix ? { ...s, archivePrefix: undefined } : undefined),
    (s) => (s.maxHistoryEvents ? { ...s, maxHistoryEvents: undefined } : undefined),
  ];
  for (const simplify of simpler) {
    const candidate = simplify(setup);
    if (candidate && (await stillFails(build(atoms, clean(candidate))))) setup = clean(candidate);
  }
  return { schedule: build(atoms, setup), runs };
}

/** Drops keys set to undefined, so the printed JSON shows only what the schedule has. */
function clean(setup: ScheduleSetup): ScheduleSetup {
  return Object.fromEntries(Object.entries(setup).filter(([, v]) => v !== undefined)) as unknown as ScheduleSetup;
}
