// `esign bulk send|status|cancel`, the real binary against the suite's Temporal server, a worker with a template
// store, the sandbox and the bridge: what an operator sees, including the errors that say what to do.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Exit } from '../../src/cli/context.js';
import { bulkBed, ndaCsv, type BulkBed } from '../support/bulk.js';
import { esignCli } from '../support/cli.js';
import { devServerAndSandbox } from '../support/sandbox.js';

const env = devServerAndSandbox();
let bed: BulkBed;
let dir: string;
beforeAll(async () => {
  bed = await bulkBed(env.ctx, env.sandbox, 'bulk-cli');
  await bed.startWorker();
  dir = await mkdtemp(join(tmpdir(), 'esign-bulk-cli-'));
});
afterAll(async () => {
  await bed?.close();
});

const esign = esignCli(
  () => ({
    ESIGN_TASK_QUEUE: bed.taskQueue,
    ESIGN_TEMPLATE_STORE: bed.storeDir,
    // A data dir of its own: no dev stack codec keys (the worker has none).
    ESIGN_DATA_DIR: dir,
  }),
  120_000,
);

it('sends a batch, says so when it is sent again, shows a progress bar, and ends with the result file', async () => {
  const csv = join(dir, 'people.csv');
  await writeFile(csv, ndaCsv(5));
  const sent = await esign('bulk', 'send', '--template', 'NDA-bulk', '--csv', csv, '--name', 'CLI batch', '--rate', '20');
  expect(sent.stderr).toBe('');
  expect(sent.code).toBe(0);
  const batchId = /batchId\s+(bulk-cli-batch-[0-9a-f]{12})/.exec(sent.stdout)?.[1];
  expect(batchId, sent.stdout).toBeDefined();
  expect(sent.stdout).toMatch(new RegExp(`template\\s+${bed.template.ref}`));
  expect(sent.stdout).toMatch(/rows\s+5/);

  const again = await esign('bulk', 'send', '--template', 'NDA-bulk', '--csv', csv, '--name', 'CLI batch');
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/submitted before: nothing new was started/);

  const signer = bed.signBatch(batchId!);
  const watched = await esign('bulk', 'status', batchId!, '--watch');
  await signer.stop();
  expect(watched.code, watched.stderr).toBe(0);
  expect(watched.stdout).toMatch(/\[#{30}\] 100 % done: 5 of 5 done \(5 signed, 0 ended otherwise, 0 failed\)/);
  expect(watched.stdout).toMatch(/result: file:\/\/.*result\.csv/);

  const json = JSON.parse((await esign('--json', 'bulk', 'status', batchId!)).stdout) as { phase: string; completed: number };
  expect(json).toMatchObject({ phase: 'done', completed: 5 });

  // Nothing is left to cancel: refused, saying why.
  const cancel = await esign('bulk', 'cancel', batchId!);
  expect(cancel.code).toBe(Exit.failed);
  expect(cancel.stderr).toMatch(/the batch has ended \(done\): nothing is left to cancel/);
}, 240_000);

it('refuses what it cannot send, saying what to do', async () => {
  const bad = join(dir, 'bad.csv');
  await writeFile(bad, 'Employe,company\nA <a@x.org>,Acme\n');
  const header = await esign('bulk', 'send', '--template', 'NDA-bulk', '--csv', bad);
  expect(header.code).toBe(Exit.usage);
  expect(header.stderr).toMatch(/column "Employe" is neither a role nor a merge field of the template.*no column for role "Employee"/);

  const missing = await esign('bulk', 'send', '--template', 'NDA-bulk', '--csv', join(dir, 'nope.csv'));
  expect(missing.code).toBe(Exit.usage);
  expect(missing.stderr).toMatch(/cannot read .*nope\.csv: no such file/);

  const slow = await esign('bulk', 'send', '--template', 'NDA-bulk', '--csv', bad, '--rate', '0');
  expect(slow.code).toBe(Exit.usage);
  expect(slow.stderr).toMatch(/--rate must be a number of rows per second of at least 0\.1, e\.g\. --rate 2/);

  const noTemplate = await esign('bulk', 'send', '--template', 'Nope@2', '--csv', bad);
  expect(noTemplate.code).not.toBe(0);
  expect(noTemplate.stderr).toMatch(/Nope@2/);

  const notABatch = await esign('bulk', 'status', 'people.csv');
  expect(notABatch.code).not.toBe(0);
  expect(notABatch.stderr).toMatch(/is not a batch id/);
  const unknown = await esign('bulk', 'status', 'bulk-nothing-000000000000');
  expect(unknown.code).toBe(Exit.notFound);
  expect(unknown.stderr).toMatch(/no batch bulk-nothing-000000000000/);
}, 120_000);
