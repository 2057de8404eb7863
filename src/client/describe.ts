import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';

/** A workflow's description, or undefined when no workflow has that id; any other failure is thrown. */
export async function describeIfExists(client: Client, workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
  return client.workflow
    .getHandle(workflowId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
}
