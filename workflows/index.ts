// The workflows the worker registers (by path: see src/worker/create-worker.ts).
export { esignTransaction } from './esign-transaction.js';
export { esignInbox } from './inbox.js';
export { esignLateCompletion } from './late-completion.js';
export { evidenceUpkeep } from './evidence-upkeep.js';
export { esignBulkSend } from './bulk-send.js';
export { esignEventLog } from './event-log.js';
export { legalHolds } from './legal-holds.js';
export { recordsRetention } from './records-retention.js';
