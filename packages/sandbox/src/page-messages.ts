/**
 * What the signing page tells the framing page when something stops the signer: one message type per thing the
 * host must do differently, and a reason code with the action it calls for (docs/integrator-events.md, "Messages
 * from the embedded signing page"). The refusal page and the live page both classify through this table.
 */
export type PageMessageType = 'esign:expired' | 'esign:ended' | 'esign:error';

/** What the host page should do about it. */
export type PageAction =
  /** Ask the backend for a fresh signing URL and load it (the old one cannot be used again). */
  | 'request_new_url'
  /** Nothing will make this page signable again: show the outcome, get the transaction's state from the backend. */
  | 'none'
  /** The signer may try again in the same page (a wrong answer, a lost connection). */
  | 'retry'
  /** Try again later (the transaction is not sent yet, the signer is locked out for a while). */
  | 'retry_later'
  /** Another participant signs first (signing order); wait for their `participant.signed` event. */
  | 'wait'
  /** The URL was issued for a participant the transaction no longer has: the integration must check its request. */
  | 'check_request';

export const PAGE_REASONS = {
  link_expired: { type: 'esign:expired', action: 'request_new_url' },
  link_used: { type: 'esign:expired', action: 'request_new_url' },
  session_expired: { type: 'esign:expired', action: 'request_new_url' },
  completed: { type: 'esign:ended', action: 'none' },
  declined: { type: 'esign:ended', action: 'none' },
  cancelled: { type: 'esign:ended', action: 'none' },
  expired: { type: 'esign:ended', action: 'none' },
  not_found: { type: 'esign:ended', action: 'none' },
  link_invalid: { type: 'esign:error', action: 'request_new_url' },
  participant_mismatch: { type: 'esign:error', action: 'check_request' },
  not_sent: { type: 'esign:error', action: 'retry_later' },
  not_your_turn: { type: 'esign:error', action: 'wait' },
  already_signed: { type: 'esign:error', action: 'none' },
  authentication_required: { type: 'esign:error', action: 'retry' },
  authentication_failed: { type: 'esign:error', action: 'retry' },
  locked: { type: 'esign:error', action: 'retry_later' },
  document_unavailable: { type: 'esign:error', action: 'retry' },
  network: { type: 'esign:error', action: 'retry' },
  provider_error: { type: 'esign:error', action: 'retry_later' },
  refused: { type: 'esign:error', action: 'retry' },
} as const satisfies Record<string, { type: PageMessageType; action: PageAction }>;

export type PageReason = keyof typeof PAGE_REASONS;

/** The message a failure becomes: `{type, reason, action, message}` (plus `source` and `esignId`, added by the page). */
export function pageMessage(
  reason: PageReason,
  message: string,
): { type: PageMessageType; reason: PageReason; action: PageAction; message: string } {
  const { type, action } = PAGE_REASONS[reason];
  return { type, reason, action, message };
}
