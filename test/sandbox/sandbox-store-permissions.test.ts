// The sandbox's SQLite file holds its JWT and webhook secrets and signers'
// passwords: it is its user's alone, and so are the directories it creates.
import { chmod, mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { SandboxStore } from '../../packages/sandbox/src/store.js';

const mode = async (path: string) => (await stat(path)).mode & 0o777;

it('creates sandbox.sqlite and its -wal and -shm 0600, in a data directory it creates 0700', async () => {
  const previous = process.umask(0o022); // the usual umask: without care, files come out 0644 and directories 0755
  try {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'sandbox-perms-')), 'data');
    const store = new SandboxStore(dataDir);
    try {
      store.ensureMeta('webhook_secret', 'whsec_secret'); // a write: the WAL and its index exist now
      expect(await mode(dataDir)).toBe(0o700);
      expect(await mode(join(dataDir, 'files'))).toBe(0o700);
      for (const file of ['sandbox.sqlite', 'sandbox.sqlite-wal', 'sandbox.sqlite-shm'])
        expect({ file, mode: await mode(join(dataDir, file)) }).toEqual({ file, mode: 0o600 });
    } finally {
      store.close();
    }
  } finally {
    process.umask(previous);
  }
});

it('narrows a database an older version left world-readable, and leaves an existing directory as it is', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sandbox-perms-old-'));
  await chmod(dataDir, 0o750);
  await writeFile(join(dataDir, 'sandbox.sqlite'), '', { mode: 0o644 });
  await chmod(join(dataDir, 'sandbox.sqlite'), 0o644);
  const store = new SandboxStore(dataDir);
  try {
    store.ensureMeta('k', 'v');
    expect(await mode(join(dataDir, 'sandbox.sqlite'))).toBe(0o600);
    expect(await mode(join(dataDir, 'sandbox.sqlite-wal'))).toBe(0o600);
    expect(await mode(dataDir)).toBe(0o750);
  } finally {
    store.close();
  }
});
