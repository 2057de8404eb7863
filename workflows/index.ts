// The workflows the worker registers (by path: see src/worker).
export { esignTransaction } from './esign-transaction.js';
