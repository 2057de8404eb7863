/**
 * Defaults of the transaction input, in a module free of zod so that the
 * workflow can read them. The schema (./input.ts) takes them from here.
 */
export const INPUT_DEFAULTS = {
  status: 'esign_pending',
  /** How long signers have; then the workflow ends as `expired`. */
  signingDeadline: '30 days',
  /** How often the provider is polled while waiting, in case a webhook is lost. */
  reconcileInterval: '1 hour',
  /**
   * The longest a quiet transaction goes between polls, unless reconcileInterval is longer; also how often a
   * parked one (a draft, a refused archive) wakes to see whether its Worker Deployment version changed.
   */
  reconcileMaxInterval: '6 hours',
  /** How long approvers have (from the start), when the transaction names any; then it ends as `expired`. */
  approvalDeadline: '7 days',
} as const;
