// Constants of the webhook contract that workflow code needs too: kept free of
// zod so that importing them does not put zod into the workflow sandbox.

/** The one event the orchestrator acts on (spec §6). */
export const ESIGN_COMPLETED_EVENT = 'esign-completed';
