// The worker's Node flags (src/worker/node-flags.ts) are written where they cannot be imported: the Dockerfile's
// command, `npm run worker` and `npm run bench` (whose process runs the archive activity); the tools' launcher
// imports them. A flag dropped from one of them would let those heaps grow back to V8's defaults.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { WORKER_NODE_FLAGS } from '../../src/worker/node-flags.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

it("the Dockerfile, `npm run worker` and `npm run bench` run the worker's code with its Node flags", async () => {
  // The image's command (its last stage's) and `npm run worker` run the compiled worker
  // (docs/decisions/compiled-javascript-in-production.md).
  const dockerfile = await readFile(`${root}Dockerfile`, 'utf8');
  const cmd = JSON.parse([...dockerfile.matchAll(/^CMD (\[.*\])$/gm)].at(-1)![1]!) as string[];
  expect(cmd.at(-1)).toBe('dist/src/worker/main.js');
  for (const flag of WORKER_NODE_FLAGS) expect(cmd).toContain(flag);

  const scripts = (JSON.parse(await readFile(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;
  const worker = scripts.worker!.split('&&').at(-1)!.trim().split(/\s+/);
  expect(worker).toEqual(['node', ...WORKER_NODE_FLAGS, 'dist/src/worker/main.js']);
  // The benchmarks run the archive activity in their own process: its memory is measured with a worker's heaps.
  const bench = scripts.bench!.split(/\s+/);
  expect(bench.at(-1)).toBe('bench/run.ts');
  for (const flag of WORKER_NODE_FLAGS) expect(bench).toContain(flag);
});

it('the flags are ones Node takes, and they bound the young generation', async () => {
  // Objects that live a while, replaced faster than the old generation takes them: V8 grows the young generation
  // to its limit (64 MiB here without the flags), and no further.
  const probe = `
    const v8 = require('node:v8');
    const ring = new Array(3000);
    for (let i = 0; i < 300000; i++) ring[i % ring.length] = { i, s: 'y' + i, b: new Array(50).fill(i) };
    const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(space.space_size));`;
  const { stdout } = await promisify(execFile)(process.execPath, [...WORKER_NODE_FLAGS, '-e', probe]);
  expect(Number(stdout)).toBeGreaterThan(0);
  expect(Number(stdout)).toBeLessThanOrEqual(2 * 16 * 2 ** 20);
});
