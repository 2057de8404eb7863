/**
 * Every failure type the orchestrator raises, in one catalogue that workflows
 * and activities both import. The type is what operators see in the Web UI
 * and CLI and what callers match on; `docs/workflow.md` lists them with their
 * meaning. Kept free of Node APIs and zod: workflow code imports it.
 */
export const FailureType = {
  // The caller's input: never retried.
  InvalidInput: 'InvalidInput',
  InvalidDocument: 'InvalidDocument',
  UrlNotAllowed: 'UrlNotAllowed',
  // Messages a workflow refuses in its current phase.
  TransactionFinished: 'TransactionFinished',
  TransactionIsDraft: 'TransactionIsDraft',
  /** A signing URL, replace or correction asked of a transaction its approvers have not yet approved. */
  AwaitingApproval: 'AwaitingApproval',
  UnknownParticipant: 'UnknownParticipant',
  /** An approval or rejection accepted while the transaction was being created, refused once it was (its reason). */
  ApprovalRefused: 'ApprovalRefused',
  /** A correction accepted, then refused at its turn: the state changed meanwhile (a signer signed). Nothing applied. */
  CorrectionRefused: 'CorrectionRefused',
  /** A cancel the provider refused: a participant has signed, so the transaction can still complete. */
  WithdrawRefused: 'WithdrawRefused',
  // The provider.
  ProviderRejected: 'ProviderRejected',
  ProviderUnavailable: 'ProviderUnavailable',
  ProviderContract: 'ProviderContractViolation',
  // Where documents come from and where outcomes go.
  DocumentSourceUnavailable: 'DocumentSourceUnavailable',
  CallbackFailed: 'CallbackFailed',
  CallbackRejected: 'CallbackRejected',
  // Bulk send: a batch whose CSV or template cannot be used (refused before any row starts).
  BatchInvalid: 'BatchInvalid',
  /** A template document, a stored document (`{object}`) or a bulk send on a worker without a store (ESIGN_TEMPLATE_STORE): never retried. */
  StoreNotConfigured: 'StoreNotConfigured',
  // The completed ZIP.
  ArchiveInvalid: 'ArchiveInvalid',
  ArchiveIncomplete: 'ArchiveIncomplete',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/**
 * The one rule for an HTTP answer that may succeed if asked again: request
 * timeout, rate limit, or a server error. Any other 4xx is final.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
