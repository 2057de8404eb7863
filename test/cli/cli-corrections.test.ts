// `esign correct`, the real binary against the suite's Temporal server, a worker and the sandbox: a correction an
// operator makes, and the messages that say what is wrong (a kind it does not know, a malformed tag, a refusal).
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
  dir = await mkdtemp(join(tmpdir(), 'esign-correct-cli-'));
}, 60_000);
afterAll(async () => {
  await env?.close();
});

// A data dir of its own: no dev stack codec keys (the worker has none).
const esign = esignCli(() => ({ ESIGN_TASK_QUEUE: env.taskQueue, ESIGN_DATA_DIR: dir }), 120_000);

it('corrects an address, and says what is wrong with a correction it cannot send or the workflow refuses', async () => {
  const input = env.input();
  const { handle } = await env.start(input);
  const [, alan] = (await waitForPhase(handle, 'awaiting_signatures')).participants.map((p) => p.id) as [string, string];

  const done = await esign(
    'correct',
    input.referenceId,
    'contact',
    '--participant',
    alan,
    '--email',
    'alan.t@example.com',
    '--by',
    'ops:jane',
  );
  expect(done.stderr).toBe('');
  expect(done.code).toBe(0);
  expect(done.stdout).toMatch(new RegExp(`removed\\s+Alan Turing \\(${alan}\\)`));
  expect(done.stdout).toMatch(/added\s+Alan Turing \([0-9a-f-]{36}\)/);

  const unknownKind = await esign('correct', input.referenceId, 'rename');
  expect(unknownKind.code).toBe(Exit.usage);
  expect(unknownKind.stderr).toContain('unknown kind "rename": one of reassign, contact, addSigner, removeSigner, deadline, resend');
  const badTag = await esign('correct', input.referenceId, 'addSigner', '--tag', '0:SIGNATURETEMPLATE:72', '--email', 'g@example.com');
  expect(badTag.code).toBe(Exit.usage);
  expect(badTag.stderr).toContain('must be document:type:x:y:width:height:page');
  const noAddress = await esign('correct', input.referenceId, 'contact', '--participant', alan);
  expect(noAddress.code).toBe(Exit.usage);
  expect(noAddress.stderr).toContain('give email, phone or both');
  const refused = await esign('correct', input.referenceId, 'resend', '--participant', alan);
  expect(refused.code).toBe(Exit.failed);
  expect(refused.stderr).toContain(`refused: unknown participant: ${alan}`);
});
