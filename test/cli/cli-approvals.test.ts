// `esign approve|reject` and the approval in `esign status`, the real binary against the suite's Temporal server, a
// worker and the sandbox: an approver's yes, a refusal that says why, a rejection that ends the transaction.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Exit } from '../../src/cli/context.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { esignCli } from '../support/cli.js';

let env: EsignTestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEsignTestEnv();
  dir = await mkdtemp(join(tmpdir(), 'esign-approve-cli-'));
}, 60_000);
afterAll(async () => {
  await env?.close();
});

const esign = esignCli(() => ({ ESIGN_TASK_QUEUE: env.taskQueue, ESIGN_DATA_DIR: dir }), 120_000);

it('approves, shows where the approval stands, refuses with the reason, and rejects', async () => {
  const input = env.input({ approval: { approvers: [{ id: 'cfo' }, { id: 'legal' }] } });
  const { handle } = await env.start(input);
  await waitForPhase(handle, 'awaiting_approval');

  const yes = await esign('approve', input.referenceId, '--approver', 'cfo', '--comment', 'budget checked');
  expect(yes.stderr).toBe('');
  expect(yes.code).toBe(0);
  expect(yes.stdout).toMatch(/outcome\s+pending/);
  expect(yes.stdout).toMatch(/approvals\s+1/);
  const status = await esign('status', input.referenceId);
  expect(status.stdout).toMatch(/approval\s+pending: 1 of 2 approved \(cfo\), by \d{4}-/);

  const stranger = await esign('approve', input.referenceId, '--approver', 'mallory');
  expect(stranger.code).toBe(Exit.failed);
  expect(stranger.stderr).toContain('mallory is not an approver of this transaction');
  const noReason = await esign('reject', input.referenceId, '--approver', 'legal');
  expect(noReason.code).toBe(Exit.usage);
  expect(noReason.stderr).toContain("required option '--reason <text>' not specified");
  const badId = await esign('approve', input.referenceId, '--approver', 'ada@example.com');
  expect(badId.code).toBe(Exit.usage);
  expect(badId.stderr).toContain('invalid approval');

  const no = await esign('reject', input.referenceId, '--approver', 'legal', '--reason', 'wrong counterparty');
  expect(no.code).toBe(0);
  expect(no.stdout).toMatch(/outcome\s+rejected/);
  expect((await handle.result()).status).toBe('rejected');
  const ended = await esign('status', input.referenceId);
  expect(ended.stdout).toMatch(/outcome\s+rejected/);
  expect(ended.stdout).toMatch(/rejectedBy\s+legal/);
});
