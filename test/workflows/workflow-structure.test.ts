// The workflows' shape: no file in workflows/ over 250 lines (one that grows past it holds two ideas), and no import
// from workflows/ into activities/, not even of a type, so the two never import in a circle (workflows import the
// activities' types, which lint holds to types only; both import src/definitions/).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const sources = async (dir: string) =>
  (await readdir(join(root, dir), { recursive: true })).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f));

it('keeps every file in workflows/ at 250 lines or fewer', async () => {
  const long: string[] = [];
  for (const file of await sources('workflows')) {
    const lines = (await readFile(join(root, file), 'utf8')).split('\n').length - 1;
    if (lines > 250) long.push(`${file}: ${lines} lines`);
  }
  expect(long).toEqual([]);
});

it('imports nothing from workflows/ into activities/', async () => {
  const found: string[] = [];
  for (const file of await sources('activities')) {
    for (const line of (await readFile(join(root, file), 'utf8')).split('\n'))
      if (/from '(\.\.\/)+workflows\//.test(line)) found.push(`${file}: ${line.trim()}`);
  }
  expect(found).toEqual([]);
});
