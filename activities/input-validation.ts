import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../src/failures.js';
import { describeIssues } from '../src/util/zod-issues.js';
import { EsignTransactionInput, type ValidEsignTransactionInput } from '../workflows/input.js';

/**
 * Validation of the workflow's input, run as a local activity: zod lives in
 * the worker's main context once, not in every cached workflow's sandbox
 * (workflows/notification.ts says why). The result, defaults applied, is
 * recorded in history, so replays do not validate again.
 */
export function createInputValidationActivities() {
  return {
    async validateTransactionInput(raw: unknown): Promise<ValidEsignTransactionInput> {
      const parsed = EsignTransactionInput.safeParse(raw);
      if (!parsed.success)
        throw ApplicationFailure.nonRetryable(`invalid input: ${describeIssues(parsed.error)}`, FailureType.InvalidInput);
      return parsed.data;
    },
  };
}
