// The first command a newcomer runs on a Node too old for this project stops at once with one line: which Node,
// and the one command that gets it. Run with the machine's own older Node (machines here carry Node 20), through
// npm's hooks as a newcomer would meet them.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

/** A node binary older than 22 on this machine's PATH, with the PATH that puts it (and its npm) first. */
async function olderNode(): Promise<{ node: string; path: string }> {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/bin', '/usr/local/bin', '/bin']);
  for (const dir of dirs) {
    const node = join(dir, 'node');
    const version = await run(node, ['-p', 'process.versions.node']).then(
      (r) => r.stdout.trim(),
      () => undefined,
    );
    if (version && Number(version.split('.')[0]) < 22) return { node, path: [dirname(node), '/usr/bin', '/bin'].join(delimiter) };
  }
  throw new Error('no Node.js older than 22 on this machine: the preflight cannot be tried against one');
}

const refusal =
  /^esign-orchestrator needs Node\.js 22\.12 or newer .*this is v\d+\.\d+\.\d+\. Get Node 24 with: eval "\$\(bash scripts\/ensure-node\.sh\)"$/m;

async function fails(file: string, args: string[], path: string): Promise<{ code: number; stderr: string }> {
  const env = { ...process.env, PATH: path, npm_config_nodedir: '' };
  return run(file, args, { cwd: root, env, timeout: 60_000 }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
  );
}

it('stops the CLI, the services and the install on an older Node with one line that says what to do', async () => {
  const old = await olderNode();
  const cli = await fails(old.node, ['bin/esign.js', 'status', 'x'], old.path);
  expect(cli.code).toBe(1);
  expect(cli.stderr.trim()).toMatch(refusal);

  // What `npm run sandbox` died of before (deep inside undici) no longer runs: the hook stops it first.
  const sandbox = await fails('npm', ['run', '--silent', 'sandbox'], old.path);
  expect(sandbox.code).not.toBe(0);
  expect(sandbox.stderr).toMatch(refusal);
  expect(sandbox.stderr).not.toMatch(/TypeError|bind/);

  const scripts = (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  for (const hook of ['preinstall', 'predev', 'pretest', 'presandbox', 'preworker', 'prebridge'])
    expect(scripts[hook], hook).toBe('node scripts/preflight.cjs');
}, 120_000);

it('lets the Node it needs through, and names the versions package.json promises', async () => {
  const ok = await run(process.execPath, ['scripts/preflight.cjs'], { cwd: root });
  expect(ok.stderr).toBe('');
  const engines = (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  expect(engines).toBe('^22.12 || >=24');
});
