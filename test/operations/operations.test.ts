// docs/operations.md, run as written: every `sh` block of the page goes through bash with the real Temporal CLI
// against the suite's dev server, while two versions of the worker (the latest released code, PREVIOUS_VERSION of
// test/support/code-versions.ts, or today's while there is none; and today's) run live transactions. Deploy, ramp, watch,
// promote, roll back, promote again, and retire; the transactions of each version end completed.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { expect, inject, it } from 'vitest';
import { startEsignTransaction } from '../../src/client/transactions.js';
import { INBOX_WORKFLOW_TYPE, inboxIdFor, type EsignInboxWorkflow } from '../../src/definitions/inbox.js';
import type { esignTransaction } from '../../workflows/esign-transaction.js';
import { PREVIOUS_VERSION } from '../support/code-versions.js';
import { eventually } from '../support/eventually.js';
import { devServerAndSandbox } from '../support/sandbox.js';
import { versionedWorkers } from '../support/versioning.js';

const run = promisify(execFile);
const env = devServerAndSandbox();

type Vars = { OLD?: string; NEW?: string; WORKFLOW_TYPE?: string; RELEASED_AT?: string };

/** The page's `sh` blocks, in order, by the label of their first comment (`# ramp: …` → `ramp`). */
function blocks(): Map<string, string> {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const found = new Map<string, string>();
  for (const m of doc.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const body = m[1]!;
    const label = /^# ([a-z-]+):/.exec(body)?.[1] ?? body.trim().split(/\s+/).slice(2, 4).join(' ');
    found.set(label, body);
  }
  return found;
}

it('docs/operations.md walks a deploy, a ramp, a rollback and a retirement, every command as written', async () => {
  const { ctx, sandbox } = env;
  const page = blocks();
  expect([...page.keys()]).toEqual([
    'drain',
    'deploy',
    'ramp',
    'watch',
    'promote',
    'rollback',
    'retire',
    'deployment delete-version',
    'retire-patch',
  ]);
  const v = await versionedWorkers(ctx, sandbox, 'operations');
  const cli = inject('temporalCliPath')!;
  const shell = async (label: string, vars: Vars) => {
    const env = {
      ...process.env,
      PATH: `${dirname(cli)}:${process.env.PATH ?? ''}`,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: ctx.namespace,
      DEPLOYMENT: v.deployment,
      ...vars,
    };
    return run('bash', ['-euo', 'pipefail', '-c', page.get(label)!], { env, timeout: 60_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? -1,
        out: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
  };
  const ok = async (label: string, vars: Vars) => {
    const result = await shell(label, vars);
    expect({ label, code: result.code, out: result.code === 0 ? '' : result.out }).toEqual({ label, code: 0, out: '' });
    return result.out;
  };
  const describe = async () =>
    JSON.parse(
      (
        await run(cli, [
          'worker',
          'deployment',
          'describe',
          '--name',
          v.deployment,
          '--output',
          'json',
          '--address',
          inject('temporalAddress'),
          '--namespace',
          ctx.namespace,
        ])
      ).stdout,
    ) as {
      routingConfig?: { currentVersionBuildID?: string; rampingVersionBuildID?: string; rampingVersionPercentage?: number };
    };
  const { taskQueue } = v;
  const start = async () => (await startEsignTransaction(ctx.client, v.input(), { taskQueue })).handle;

  try {
    // Before a first 1.0 deploy: the runs of earlier builds still open (none on this server).
    expect(await ok('drain', {})).toMatch(/Total: \d+/);

    // The first version, the latest released code: started, then made current as a promotion does.
    await v.start('v1', PREVIOUS_VERSION);
    await eventually('v1 registered', async () => (await shell('deploy', { NEW: 'v1' })).code === 0);
    await ok('promote', { NEW: 'v1' });
    const first = await start();
    await eventually('the first transaction runs on v1', async () => (await v.versionOf(first)).buildId === 'v1');

    // 1. Deploy v2 beside v1; 2. ramp it; 3. watch.
    await v.start('v2');
    await eventually('v2 registered and polling', async () => (await shell('deploy', { NEW: 'v2' })).code === 0);
    expect(await ok('deploy', { NEW: 'v2' })).toMatch(/v2/);
    await ok('ramp', { NEW: 'v2' });
    expect((await describe()).routingConfig).toMatchObject({
      currentVersionBuildID: 'v1',
      rampingVersionBuildID: 'v2',
      rampingVersionPercentage: 10,
    });
    const watched = await ok('watch', { NEW: 'v2' });
    expect(watched).toMatch(/Total: \d+/);

    // 4. Promote: new transactions start on v2; the pinned first one moves at its continue-as-new.
    await ok('promote', { NEW: 'v2' });
    expect((await describe()).routingConfig).toMatchObject({ currentVersionBuildID: 'v2' });
    const second = await start();
    await eventually('the second transaction runs on v2', async () => (await v.versionOf(second)).buildId === 'v2');
    const moved = ctx.client.workflow.getHandle<typeof esignTransaction>(first.workflowId);
    await eventually('the first transaction moved to v2', async () => (await v.versionOf(moved)).buildId === 'v2');

    // 5. Roll back: v1 is current again, and a new transaction starts there.
    await ok('rollback', { OLD: 'v1' });
    const third = await start();
    await eventually('the third transaction runs on v1', async () => (await v.versionOf(third)).buildId === 'v1');
    expect(await v.versionOf(third)).toMatchObject({ behavior: temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED });

    // Forward again, and every transaction ends completed on the version it is on.
    await ok('promote', { NEW: 'v2' });
    for (const h of [
      moved,
      ctx.client.workflow.getHandle<typeof esignTransaction>(second.workflowId),
      ctx.client.workflow.getHandle<typeof esignTransaction>(third.workflowId),
    ]) {
      await v.signAll(h);
      expect((await h.result()).status).toBe('completed');
    }

    // 6. Retire v1: it holds no running transaction; its workers stop; the server refuses to delete it until it has
    // marked it drained and forgotten its workers' polls, as the page says (a few minutes later it deletes it).
    const retire = await ok('retire', { OLD: 'v1' });
    expect(retire).toMatch(/Total: 0/);
    await v.stop('v1');
    const deleted = await shell('deployment delete-version', { OLD: 'v1' });
    expect({ code: deleted.code, refusedFor: /draining|poller/i.test(deleted.out) }).toMatchObject(
      deleted.code === 0 ? { code: 0 } : { refusedFor: true },
    );

    // Retiring a patch of a workflow that follows the current version: the query finds its runs still open from before
    // a release, and none from before any. An inbox as the bridge starts one (for a completion nobody owns) stands in.
    const transactionId = randomUUID();
    await ctx.client.workflow.start<EsignInboxWorkflow>(INBOX_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: inboxIdFor(transactionId),
      args: [{ transactionId }],
    });
    const since = { WORKFLOW_TYPE: INBOX_WORKFLOW_TYPE, RELEASED_AT: new Date(Date.now() + 1000).toISOString() };
    await eventually('the open inbox counted', async () => /Total: [1-9]/.test((await shell('retire-patch', since)).out));
    expect(await ok('retire-patch', { ...since, RELEASED_AT: new Date(Date.now() - 3600_000).toISOString() })).toMatch(/Total: 0/);
    await ctx.client.workflow.getHandle(inboxIdFor(transactionId)).terminate('test done');
  } finally {
    await v.close();
  }
  // Every command of the page as a process of its own, workers deployed and drained: minutes under load.
}, 240_000);
