/**
 * Keeps a workflow's history for test/workflows/replay.test.ts when RECORD_REFUSAL_HISTORIES=1: written to
 * test/replay/histories/<current version>/<file>, formatted as the committed ones are.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { format } from 'prettier';
import { CURRENT_VERSION } from './code-versions.js';

export async function recordHistory(handle: WorkflowHandle, file: string): Promise<void> {
  if (process.env.RECORD_REFUSAL_HISTORIES !== '1') return;
  const path = fileURLToPath(new URL(`../replay/histories/${CURRENT_VERSION}/${file}`, import.meta.url));
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, await format(historyToJSON(await handle.fetchHistory()), { filepath: path }));
}
