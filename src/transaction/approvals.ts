/**
 * The `approve` and `reject` updates' schemas, which the client checks before
 * sending; the workflow checks again, zod-free, in its validators (another SDK
 * may send them).
 */
import { z } from 'zod';
import { APPROVER_ID, MAX_APPROVAL_COMMENT } from '../definitions/approvals.js';
import { PlainText } from './input.js';

const ApproverId = z.string().regex(APPROVER_ID, "must be the id of one of the transaction's approvers");
const Text = PlainText('many').min(1).max(MAX_APPROVAL_COMMENT);

export const ApprovalRequest = z.object({ approverId: ApproverId, comment: Text.optional() }).strict();
export const RejectionRequest = z.object({ approverId: ApproverId, reason: Text }).strict();
