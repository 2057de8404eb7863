// `esign hold|release|holds`, `esign keys init` and `esign erase`, the real binary against the suite's Temporal server and a worker, which runs the
// namespace's holds register (`esign-legal-holds`; the only test that starts it on the shared server): a hold placed
// and listed, a release with its reason, and the messages that say what is wrong.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Exit } from '../../src/cli/context.js';
import { newCodecKeys } from '../../src/codec/aes-gcm-codec.js';
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

it('makes the key store once, and erases a referenceId only once no hold keeps it', async () => {
  const keys = { ESIGN_CODEC_KEYS: newCodecKeys('k1'), ESIGN_KEY_STORE: `sqlite:${join(dir, 'keys.sqlite')}` };
  const withKeys = esignCli(() => ({ ESIGN_TASK_QUEUE: env.taskQueue, ESIGN_DATA_DIR: dir, ...keys }), 120_000);
  const made = await withKeys('--json', 'keys', 'init');
  expect(made.code, made.stderr).toBe(0);
  expect((JSON.parse(made.stdout) as { storeId?: unknown }).storeId).toMatch(/\S/);
  const again = await withKeys('keys', 'init');
  expect(again.code).toBe(Exit.failed);
  expect(again.stderr).toMatch(/exists/);
  // A deployment's first start (compose's key-store service): the store that is there, said, not replaced.
  const present = await withKeys('--json', 'keys', 'init', '--if-absent');
  expect(present.code, present.stderr).toBe(0);
  expect((JSON.parse(present.stdout) as { storeId?: unknown }).storeId).toBe((JSON.parse(made.stdout) as { storeId?: unknown }).storeId);
  const rewrapped = await withKeys('--json', 'keys', 'rewrap');
  expect(rewrapped.code, rewrapped.stderr).toBe(0);
  expect(JSON.parse(rewrapped.stdout)).toEqual({ rewrapped: 0, live: 0, erased: 0 });

  const placed = await esign('--json', 'hold', 'reference', 'erase-me-001', '--reason', 'matter 9', '--by', 'legal:sam');
  const hold = JSON.parse(placed.stdout) as { id: string };
  const held = await withKeys('erase', 'erase-me-001', '--reason', 'request 12');
  expect(held.code).toBe(Exit.failed);
  expect(held.stderr).toContain(`erasure refused: erase-me-001 is held: ${hold.id} (reference erase-me-001: matter 9)`);
  expect((await esign('release', hold.id, '--reason', 'settled')).code).toBe(0);

  const erased = await withKeys('erase', 'erase-me-001', '--reason', 'request 12', '--by', 'dpo:kim');
  expect(erased.code, erased.stderr).toBe(0);
  expect(erased.stdout).toMatch(/by\s+dpo:kim/);
  expect(erased.stdout).toContain('no data keys to destroy');
  expect(erased.stdout).toContain("namespace's retention");

  const noStore = await esignCli(() => ({ ESIGN_TASK_QUEUE: env.taskQueue, ESIGN_DATA_DIR: dir, ESIGN_CODEC_KEYS: keys.ESIGN_CODEC_KEYS }))(
    'erase',
    'erase-me-001',
    '--reason',
    'x',
  );
  expect(noStore.code).toBe(Exit.usage);
  expect(noStore.stderr).toContain('no key store: set ESIGN_KEY_STORE');
});
