/**
 * How validation failures are told to people: one line naming each failing
 * field (CLI, logs, Temporal failures), or RFC 9457 `errors` entries with
 * RFC 6901 pointers (problem+json). Every boundary formats zod issues here.
 */
import type { z } from 'zod';

/** Names each failing field as a path, e.g. `documents[0].tags[1].signerId: …`. */
export function describeIssues(error: z.ZodError, limit = 5): string {
  const parts = error.issues.slice(0, limit).map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
  const more = error.issues.length > limit ? ` (+${error.issues.length - limit} more)` : '';
  return parts.join('; ') + more;
}

export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}

/** Issues as RFC 9457 `errors` entries with RFC 6901 pointers. */
export function issuesToProblemErrors(error: z.ZodError): { pointer: string; detail: string }[] {
  return error.issues.map((issue) => ({
    pointer: '/' + issue.path.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/'),
    detail: `${formatPath(issue.path)}: ${issue.message}`,
  }));
}
