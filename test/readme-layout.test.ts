// A newcomer finds every folder and document from the README: its layout table names each folder of the source
// tree and each document in docs/.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

async function folders(dir: string): Promise<string[]> {
  return (await readdir(join(root, dir), { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => `${dir ? `${dir}/` : ''}${e.name}/`);
}

it('names every folder of the source tree and every document in docs/', async () => {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const layout = readme.slice(readme.indexOf('## Layout'));
  const top = (await folders('')).filter((f) => !/^(\.|node_modules|test-artifacts|dist)/.test(f));
  const docs = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  const expected = [...top, ...(await folders('src')), ...docs];
  // A document may be named within the docs/ row, without its folder.
  const missing = expected.filter((name) => !layout.includes(`\`${name}`) && !layout.includes(`\`${name.replace(/^docs\//, '')}\``));
  expect(missing).toEqual([]);
});
