/**
 * A workflow type's Worker Versioning behaviour (docs/operations.md), declared only when a versioned worker runs
 * it: the server refuses a workflow task completion that names a behaviour from an unversioned worker.
 */
import type { VersioningBehavior, WorkflowDefinitionOptions } from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';

export function versioningBehavior(behavior: VersioningBehavior): () => WorkflowDefinitionOptions {
  return () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior } : {});
}
