/**
 * The orchestrator's failure types (src/failures.ts) as a backend meets them: inside the errors the Temporal client
 * throws for a failed workflow or a refused update (WorkflowFailedError, WorkflowUpdateFailedError), as the `type`
 * of an ApplicationFailure somewhere down the causes.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../failures.js';

const CATALOGUE = new Set<string>(Object.values(FailureType));

/**
 * The catalogued failure type behind `err` (e.g. `WithdrawRefused` for a cancel refused because someone signed,
 * `InvalidInput` for a workflow that refused its input), or undefined when there is none.
 */
export function failureTypeOf(err: unknown): FailureType | undefined {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 20; depth++, e = e.cause) {
    if (e instanceof ApplicationFailure && e.type && CATALOGUE.has(e.type)) return e.type as FailureType;
  }
  return undefined;
}
