/**
 * What clients see of the workflows they start (src/definitions/: each one's type without its code, which is all the
 * client package carries) must fit the workflows themselves: this file compiles only while it does. Type-only, and
 * imported by nothing, so no bundle holds it.
 */
import type { BulkSendWorkflow } from '../src/definitions/bulk.js';
import type { EsignTransactionWorkflow } from '../src/definitions/transaction.js';
import type { esignBulkSend } from './bulk-send.js';
import type { esignTransaction } from './esign-transaction.js';

type Fits<Workflow extends ClientView, ClientView> = Workflow;

export type ClientViews = [Fits<typeof esignTransaction, EsignTransactionWorkflow>, Fits<typeof esignBulkSend, BulkSendWorkflow>];
