/**
 * Durations in inputs and settings: milliseconds, or a number and a unit
 * such as '30 days', '1 hour', '90s'. The schema accepts exactly what this
 * parser reads, with the multipliers Temporal's own duration strings use.
 * Free of zod and Node APIs: the workflow parses durations with it.
 */
const UNIT_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  weeks: 604_800_000,
  // A year counts 366 days: a retention in years never ends before the calendar's (docs/records.md).
  y: 31_622_400_000,
  year: 31_622_400_000,
  years: 31_622_400_000,
};

export const DURATION_PATTERN = new RegExp(`^(\\d+(?:\\.\\d+)?)\\s*(${Object.keys(UNIT_MS).join('|')})$`, 'i');

/** A duration the schema accepted, in milliseconds. */
export function durationToMs(duration: number | string): number {
  if (typeof duration === 'number') return duration;
  const match = DURATION_PATTERN.exec(duration.trim());
  if (!match) throw new TypeError(`not a duration: ${JSON.stringify(duration)}`);
  return Number(match[1]) * UNIT_MS[match[2]!.toLowerCase()]!;
}
