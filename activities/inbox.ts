import { Context } from '@temporalio/activity';
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
  };
}
