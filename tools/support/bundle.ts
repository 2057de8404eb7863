import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Writes the prebuilt workflow bundle production workers use into `dir`, from today's source; its path. */
export async function writeWorkflowBundle(dir: string): Promise<string> {
  const { bundleWorkflows } = await import('../../src/worker/create-worker.js');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const code = await bundleWorkflows(quiet);
  const path = join(dir, 'workflow-bundle.js');
  await writeFile(path, code);
  return path;
}

/**
 * The bundle the workers a tool starts (benchmarks, chaos, the cluster) load, so they do not bundle at start: the
 * one this process was given (ESIGN_WORKFLOW_BUNDLE: the test suite builds one for all of them), else one written
 * into `dir`.
 */
export async function prebuiltBundle(dir: string): Promise<string> {
  return process.env.ESIGN_WORKFLOW_BUNDLE || writeWorkflowBundle(dir);
}
