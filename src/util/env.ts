/**
 * Reading settings from the environment, with one meaning for every service:
 * the same words mean true, the same separator makes a list, and a bad
 * setting fails start-up with a message naming the variable.
 */
import { z } from 'zod';
import { describeIssues } from './zod-issues.js';

const TRUE = ['true', '1', 'yes', 'on'];
const FALSE = ['false', '0', 'no', 'off'];

/** A boolean setting: true/1/yes/on or false/0/no/off, in any case. */
export const envBool = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .refine((v) => TRUE.includes(v) || FALSE.includes(v), `must be one of ${[...TRUE, ...FALSE].join(', ')}`)
  .transform((v) => TRUE.includes(v));

/** Splits a comma-separated setting, trimming items and dropping empty ones. */
export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

/** A comma-separated list setting; empty when unset. */
export const envList = z.string().default('').transform(splitList);

/** Parses `env` with `schema`, or throws `invalid <what> configuration: <VAR>: <why>`. */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv, what: string): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) throw new Error(`invalid ${what} configuration: ${describeIssues(parsed.error)}`);
  return parsed.data;
}
