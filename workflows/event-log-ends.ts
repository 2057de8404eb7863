/**
 * When an integrator's event log (workflows/event-log.ts) has ended, and so may close after its retention: decided in
 * src/definitions/event-log.ts, which a client reading a closed log's history shares.
 */
export { everyTransactionEnded } from '../src/definitions/event-log.js';
