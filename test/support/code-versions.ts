// The workflow code of a released version, taken from git, so its histories keep replaying against the code that
// recorded them and a test can run that code beside today's (docs/decisions/versioning-policy.md).
import { execFile } from 'node:child_process';
import { access, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The version of the code in this tree: histories under test/replay/histories/<it>/ replay against the working tree. */
export const CURRENT_VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * Every earlier version whose histories are kept, with the commit its workers ran. A version's workflow code is
 * what a pinned run of it replays on, so the commit is the release itself, never a later one. None yet: 1.0.0 is the
 * first release whose runs are supported (runs of the versions before it are drained before it is deployed); the
 * version after it adds `'1.0.0': '<its release commit>'` here.
 */
export const RELEASED_VERSIONS: Record<string, string> = {};

/**
 * The latest released version: the workflow code the versioning tests run beside today's as the version being
 * replaced. Undefined while there is none, and they run today's code under both build ids.
 */
export const PREVIOUS_VERSION: string | undefined = Object.keys(RELEASED_VERSIONS).at(-1);

/** What the workflow bundle of a version is built from: the workflows and the modules they import. */
const SOURCES = ['workflows', 'src', 'activities', 'package.json', 'tsconfig.json'];

/**
 * `workflows/index.ts` of `version`, checked out once per clone into test-artifacts/ (git-ignored) and resolving
 * packages from this tree's node_modules. Fails, saying what to do, when the clone lacks the commit.
 */
export async function workflowsPathOf(version: string): Promise<string> {
  if (version === CURRENT_VERSION) return join(root, 'workflows', 'index.ts');
  const commit = RELEASED_VERSIONS[version];
  if (!commit) throw new Error(`no commit is recorded for workflow code version ${version} (test/support/code-versions.ts)`);
  const dir = join(root, 'test-artifacts', 'code-versions', `${version}-${commit.slice(0, 12)}`);
  const entry = join(dir, 'workflows', 'index.ts');
  if (await exists(join(dir, '.complete'))) return entry;
  if (!(await hasCommit(commit))) {
    // A shallow clone (some CI checkouts) lacks it: fetch the history once from where it was cloned.
    await run('git', ['-C', root, 'fetch', '--quiet', '--unshallow']).catch(() => undefined);
    if (!(await hasCommit(commit)))
      throw new Error(
        `commit ${commit} (workflow code ${version}) is not in this clone, so its histories cannot be replayed against it: ` +
          `clone with full history, or run \`git fetch --unshallow\``,
      );
  }
  // Extracted beside its final place and renamed into it, so a concurrent or interrupted run never sees half a tree.
  const partial = `${dir}.${process.pid}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  const tar = `${partial}.tar`;
  await run('git', ['-C', root, 'archive', '--format=tar', `--output=${tar}`, commit, ...SOURCES]);
  await run('tar', ['-xf', tar, '-C', partial]);
  await rm(tar);
  await symlink(join(root, 'node_modules'), join(partial, 'node_modules'), 'dir');
  await writeFile(join(partial, '.complete'), `${commit}\n`);
  try {
    await rename(partial, dir);
  } catch (err) {
    // Another process finished first: use its copy.
    await rm(partial, { recursive: true, force: true });
    if (!(await exists(join(dir, '.complete')))) throw err;
  }
  return entry;
}

async function hasCommit(commit: string): Promise<boolean> {
  return run('git', ['-C', root, 'cat-file', '-e', `${commit}^{commit}`]).then(
    () => true,
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
