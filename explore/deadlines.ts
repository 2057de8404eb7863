/**
 * Where the deadline corrections sent to one transaction left its signing deadline, as far as the explorer can know:
 * the deadline check (explore/checks.ts) and the drive to the end (explore/driver.ts) read it here, alike.
 *
 * An answer says to when (`deadline.to`). A correction whose answer never came (the client lost it to a worker
 * restart, or it was still on its way) may have moved it to what it asked for, or not: each such one after the last
 * answer is a deadline that may be in force. A correction refused (`failed`) moved nothing.
 */
import type { MessageOutcome } from './observation.js';

export interface CorrectedDeadline {
  /** The deadline the last answered correction set (ms since the epoch), if one was answered. */
  answered?: number;
  /** Deadlines asked for, after the last answer, by corrections whose answer never came: any may be in force. */
  uncertain: number[];
}

export function correctedDeadline(messages: readonly MessageOutcome[], part: number): CorrectedDeadline {
  const result: CorrectedDeadline = { uncertain: [] };
  for (const m of messages) {
    if ((m.part ?? 0) !== part || m.kind !== 'correct' || m.asked !== 'deadline') continue;
    if (m.outcome === 'ok') {
      const to = Date.parse((m.value as { deadline?: { to?: string } } | undefined)?.deadline?.to ?? '');
      if (Number.isFinite(to)) {
        result.answered = to;
        result.uncertain = [];
      }
    } else if (m.outcome === 'pending' || m.outcome === 'error') {
      const asked = Date.parse(m.deadline ?? '');
      if (Number.isFinite(asked)) result.uncertain.push(asked);
    }
  }
  return result;
}
