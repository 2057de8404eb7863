// `esign hold|release|holds`, the real binary against the suite's Temporal server and a worker, which runs the
// namespace's holds register (`esign-legal-holds`; the only test that starts it on the shared server): a hold placed
// and listed, a release with its reason, and the messages that say what is wrong.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Exit } from '../../src/cli/context.js';
import { LEGAL_HOLDS_WORKFLOW_ID } from '../../src/definitions/records.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { esignCli } from '../support/cli.js';

let env: EsignTestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEsignTestEnv();
  dir = await mkdtemp(join(tmpdir(), 'esign-holds-cli-'));
}, 60_000);
afterAll(async () => {
  // The register runs on this test's task queue: it ends with the test, so no other worker inherits it.
  await env?.temporal.client.workflow
    .getHandle(LEGAL_HOLDS_WORKFLOW_ID)
    .terminate('test over')
    .catch(() => undefined);
  await env?.close();
});

const esign = esignCli(() => ({ ESIGN_TASK_QUEUE: env.taskQueue, ESIGN_DATA_DIR: dir }), 120_000);

it('places, lists and releases a legal hold, and says what is wrong with one it cannot place', async () => {
  const placed = await esign('--json', 'hold', 'reference', 'lease-2026-001', '--reason', 'matter 114', '--by', 'legal:sam');
  expect(placed.stderr).toBe('');
  expect(placed.code).toBe(0);
  const hold = JSON.parse(placed.stdout) as { id: string };
  expect(hold).toMatchObject({ scope: 'reference', target: 'lease-2026-001', reason: 'matter 114', by: 'legal:sam' });

  const listed = await esign('holds');
  expect(listed.stdout).toContain(hold.id);
  expect(listed.stdout).toContain('matter 114');

  const released = await esign('release', hold.id, '--reason', 'settled', '--by', 'legal:sam');
  expect(released.code).toBe(0);
  expect(released.stdout).toMatch(/released\s+\S+ by legal:sam: settled/);
  expect((await esign('holds')).stdout).toContain('no holds');
  expect((await esign('holds', '--all')).stdout).toContain(hold.id);

  const badScope = await esign('hold', 'matter', 'b-1', '--reason', 'x');
  expect(badScope.code).toBe(Exit.usage);
  expect(badScope.stderr).toContain('unknown scope "matter": one of transaction, reference, batch');
  const noReason = await esign('hold', 'reference', 'lease-2026-001');
  expect(noReason.code).toBe(Exit.usage);
  const twice = await esign('release', hold.id, '--reason', 'again');
  expect(twice.code).toBe(Exit.failed);
  expect(twice.stderr).toContain('was released at');
});
