/**
 * Defaults of the transaction input, in a module free of zod so that the
 * workflow can apply them when it replays histories recorded before input
 * validation moved to an activity. The schema (./input.ts) takes them from here.
 */
export const INPUT_DEFAULTS = {
  status: 'esign_pending',
  /** How long signers have; then the workflow ends as `expired`. */
  signingDeadline: '30 days',
  /** How often the provider is polled while waiting, in case a webhook is lost. */
  reconcileInterval: '1 hour',
  /** The longest a quiet transaction goes between polls, unless reconcileInterval is longer. */
  reconcileMaxInterval: '6 hours',
} as const;
