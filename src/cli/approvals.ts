/**
 * `esign approve|reject <referenceId> --approver <id>`: an approver's answer to a transaction awaiting approval
 * (docs/workflow.md, "Approvals"), sent as the approver it names: the CLI is an operator's tool, and the audit records
 * the approver's id, so run it for an approver only on their word.
 */
import type { Command } from 'commander';
import { approveEsignTransaction, InvalidApproval, rejectEsignTransaction } from '../client/transactions.js';
import type { ApprovalAnswer, ApprovalStatus } from '../definitions/approvals.js';
import { CliError, Exit, type CliKit } from './context.js';
import { fields } from './output.js';

export function registerApprovalCommands(program: Command, kit: CliKit): void {
  // What the client refuses before sending is the command's misuse; the workflow's refusals are failures.
  const answered = (sent: Promise<ApprovalAnswer>) =>
    sent.catch((err: unknown) => {
      if (err instanceof InvalidApproval) throw new CliError(err.message, Exit.usage);
      throw err;
    });
  const print = (done: ApprovalAnswer) => kit.print(done, () => fields({ ...done }));
  program
    .command('approve <referenceId>')
    .description('approve a transaction awaiting approval, as one of its approvers (the quorum sends it)')
    .requiredOption('--approver <id>', "the approver's id, as the transaction names them")
    .option('--comment <text>')
    .action(async (referenceId: string, o: { approver: string; comment?: string }) => {
      const done = await kit.withContext((ctx) =>
        answered(
          approveEsignTransaction(ctx.client, referenceId, { approverId: o.approver, ...(o.comment ? { comment: o.comment } : {}) }),
        ),
      );
      print(done);
    });
  program
    .command('reject <referenceId>')
    .description('reject a transaction awaiting approval, as one of its approvers: it ends rejected, never sent')
    .requiredOption('--approver <id>', "the approver's id, as the transaction names them")
    .requiredOption('--reason <text>', 'why: the integrator and the audit keep it')
    .action(async (referenceId: string, o: { approver: string; reason: string }) => {
      const done = await kit.withContext((ctx) =>
        answered(rejectEsignTransaction(ctx.client, referenceId, { approverId: o.approver, reason: o.reason })),
      );
      print(done);
    });
}

/** The status's approval on one line: "pending: 1 of 2 approved (cfo), by 2026-12-01T10:00:00.000Z". */
export function approvalLine(a: ApprovalStatus): string {
  const approved = a.approvers.filter((x) => x.decision === 'approved').map((x) => x.id);
  const rejected = a.approvers.find((x) => x.decision === 'rejected');
  return `${a.state}: ${approved.length} of ${a.quorum} approved${approved.length ? ` (${approved.join(', ')})` : ''}${rejected ? `, rejected by ${rejected.id}` : ''}, by ${a.deadline}`;
}
