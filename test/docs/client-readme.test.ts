// The client package's README is its reference: every function and class the package exports is named in it, so
// a newcomer reading it top to bottom meets the whole API (issue 40, item 5).
import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import * as exported from '../../src/client/index.js';

it('names every function and class the package exports', async () => {
  const readme = await readFile(new URL('../../packages/client/README.md', import.meta.url), 'utf8');
  const missing = Object.entries(exported)
    .filter(([name, value]) => typeof value === 'function' && !new RegExp(`\\b${name}\\b`).test(readme))
    .map(([name]) => name);
  expect(missing).toEqual([]);
});
