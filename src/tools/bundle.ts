import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Writes the prebuilt workflow bundle production workers use into `dir`, so tool-started workers do not bundle at start. */
export async function prebuiltBundle(dir: string): Promise<string> {
  const { bundleWorkflows } = await import('../worker/create-worker.js');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const code = await bundleWorkflows(quiet);
  const path = join(dir, 'workflow-bundle.js');
  await writeFile(path, code);
  return path;
}
