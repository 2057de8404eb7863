import { Context, log } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { LATE_COMPLETION_WORKFLOW_TYPE, lateCompletionIdFor, type LateCompletionInput } from '../workflows/definitions.js';
import type { esignLateCompletion } from '../workflows/late-completion.js';
import { INBOX_WORKFLOW_TYPE, inboxIdFor, inboxRegisterSignal, type InboxInput } from '../workflows/inbox-definitions.js';
import type { esignInbox } from '../workflows/inbox.js';

export interface InboxDeps {
  /** Passed to the inbox when this registration starts it. */
  orphanAfter?: string;
}

export function createInboxActivities(deps: InboxDeps) {
  return {
    /**
     * Tells the transaction's inbox which workflow owns it, starting the inbox
     * if no webhook has yet: signal-with-start is atomic, so whichever of the
     * bridge and this registration comes first creates it.
     */
    async registerWithInbox(input: { transactionId: string; ownerWorkflowId: string }): Promise<void> {
      const { client, info } = Context.current();
      const args: InboxInput = { transactionId: input.transactionId, ...(deps.orphanAfter ? { orphanAfter: deps.orphanAfter } : {}) };
      await client.workflow.signalWithStart<typeof esignInbox, [{ ownerWorkflowId: string }]>(INBOX_WORKFLOW_TYPE, {
        workflowId: inboxIdFor(input.transactionId),
        taskQueue: info.taskQueue,
        args: [args],
        signal: inboxRegisterSignal,
        signalArgs: [{ ownerWorkflowId: input.ownerWorkflowId }],
      });
    },

    /**
     * Starts the late-completion workflow of a transaction, once: its id is
     * the transaction's, so a second completion joins the running one, and
     * one that already archived is not started again.
     */
    async startLateCompletion(input: LateCompletionInput): Promise<{ workflowId: string }> {
      const { client, info } = Context.current();
      const workflowId = lateCompletionIdFor(input.transactionId);
      try {
        await client.workflow.start<typeof esignLateCompletion>(LATE_COMPLETION_WORKFLOW_TYPE, {
          workflowId,
          taskQueue: info.taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        log.info('late completion already ran for this transaction', { workflowId });
      }
      return { workflowId };
    },
  };
}
