/**
 * Text people type for other people to read: approvers' names, comments, reasons. It reaches terminals (`esign`
 * prints it as is), the integrator's events and the archive's manifest, so characters that move a terminal's cursor,
 * clear its screen or reorder what a reader sees (C0 and C1 controls, bidirectional overrides and isolates) are
 * refused where the text comes in, rather than escaped by every reader. Zod-free: workflows' validators use it.
 */
// A line break and a tab are text in a comment; a carriage return rewrites the line a terminal shows.
// eslint-disable-next-line no-control-regex
const CONTROL_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/u;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** Why `value` is not plain text (`one` line, or `many` with line breaks and tabs), or undefined. */
export function textProblem(value: string, lines: 'one' | 'many'): string | undefined {
  if ((lines === 'one' ? CONTROL : CONTROL_IN_LINES).test(value))
    return lines === 'one' ? 'must be one line of text, without control characters' : 'must be text without control characters';
  if (BIDI.test(value)) return 'must not contain bidirectional control characters';
  return undefined;
}
